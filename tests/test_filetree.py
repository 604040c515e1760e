"""Trees someone else controls (autograder/filetree.py): walked and removed without recursion,
links never followed, bounded; and every walk of the kit that goes through it (sweeps, digests,
private copies, packing, intake, the class listing) survives a tree deeper than Python's
recursion limit. Fast: no grading here (tests/test_hostile_trees.py grades)."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from autograder import filetree, intake, jobs
from helpers import deep_chain
from autograder.batching import cluster, discovery, resume
from autograder.sandbox import isolation, users

IS_ROOT = os.geteuid() == 0
LONG = "d" * 200                       # 3000 of them: a path of 600 KB, far past PATH_MAX
PAST_RECURSION = sys.getrecursionlimit() + 100      # deeper than any recursive walk can go


@pytest.fixture
def scratch(tmp_path):
    """tmp_path, emptied with the kit's own remover afterwards (pytest's own clean-up of a
    3000-deep tree would hit the recursion this module is about)."""
    yield tmp_path
    for child in list(tmp_path.iterdir()):
        filetree.remove(child)


# --------------------------------------------------------------------------- removal

def test_the_standard_library_cannot_remove_what_a_student_can_make(scratch):
    """The control: shutil.rmtree recurses (Python 3.11) and a tree deeper than the recursion
    limit escapes it."""
    top = deep_chain(scratch / "a", PAST_RECURSION)
    if sys.version_info >= (3, 12):
        pytest.skip("this Python's shutil.rmtree no longer recurses")
    with pytest.raises(RecursionError):
        shutil.rmtree(top, ignore_errors=True)


def test_a_tree_3000_deep_with_long_names_is_removed(scratch):
    top = deep_chain(scratch / "a", 3000, name=LONG)
    done = filetree.remove(top)
    assert done.complete, done.problems
    assert done.removed == 3001
    assert not top.exists() and (scratch / "a").is_dir()


def test_removal_never_follows_a_link(scratch):
    outside = scratch / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    top = deep_chain(scratch / "a", 50)
    inner = top
    for _ in range(20):
        inner = inner / "d"
    (inner / "to-outside").symlink_to(outside, target_is_directory=True)
    (inner / "to-file").symlink_to(outside / "keep.txt")
    assert filetree.remove(top).complete
    assert (outside / "keep.txt").read_text() == "mine"
    assert filetree.remove(scratch / "missing").complete           # already gone: nothing to say
    link = scratch / "link"
    link.symlink_to(outside, target_is_directory=True)
    assert filetree.remove(link).complete
    assert not link.is_symlink() and (outside / "keep.txt").exists()


@pytest.mark.skipif(IS_ROOT, reason="root may list any folder")
def test_removal_goes_on_past_what_it_cannot_remove(scratch):
    top = scratch / "a"
    (top / "closed").mkdir(parents=True)
    (top / "closed" / "x").write_text("x")
    (top / "open").mkdir()
    (top / "open" / "y").write_text("y")
    os.chmod(top / "closed", 0)
    try:
        done = filetree.remove(top)
        assert not done.complete and "closed" in done.summary()
        assert not (top / "open").exists() and (top / "closed").exists()
    finally:
        os.chmod(top / "closed", 0o700)


def test_removal_is_bounded_and_says_what_it_left(scratch):
    top = deep_chain(scratch / "a", 30)
    done = filetree.remove(top, filetree.Bounds(depth=10, entries=1000, bytes=None))
    assert not done.complete and "nested more than 10 folders deep" in done.summary()
    assert top.exists()
    wide = scratch / "wide"
    wide.mkdir()
    for n in range(50):
        (wide / f"f{n}").write_text("")
    done = filetree.remove(wide, filetree.Bounds(depth=10, entries=20, bytes=None))
    assert not done.complete and "more than 20" in done.summary()


# --------------------------------------------------------------------------- walking

def test_walk_is_sorted_bounded_in_depth_and_never_follows_links(scratch):
    root = scratch / "sub"
    (root / "b" / "c").mkdir(parents=True)
    (root / "a.py").write_text("x")
    (root / "b" / "c" / "d.py").write_text("yy")
    (root / "b" / "link").symlink_to("/etc", target_is_directory=True)
    seen = [(e.rel, e.kind, e.depth, e.too_deep)
            for e in filetree.walk(root, filetree.Bounds(depth=2, entries=100, bytes=100))]
    assert seen == [("a.py", filetree.Kind.FILE, 1, False), ("b", filetree.Kind.FOLDER, 1, False),
                    ("b/c", filetree.Kind.FOLDER, 2, True), ("b/link", filetree.Kind.LINK, 2, False)]


def test_walk_raises_past_its_entries_or_bytes(scratch):
    root = scratch / "sub"
    root.mkdir()
    for n in range(5):
        (root / f"f{n}").write_bytes(b"x" * 100)
    with pytest.raises(filetree.TooLarge, match="more than 4 files"):
        list(filetree.walk(root, filetree.Bounds(depth=5, entries=4, bytes=None)))
    with pytest.raises(filetree.TooLarge, match="larger than 450 bytes"):
        list(filetree.walk(root, filetree.Bounds(depth=5, entries=100, bytes=450)))
    assert len(list(filetree.walk(root, filetree.Bounds(depth=5, entries=5, bytes=500)))) == 5


def test_a_folder_swapped_during_the_walk_ends_it(scratch):
    root = scratch / "sub"
    (root / "a").mkdir(parents=True)
    (root / "a" / "x").write_text("x")
    (scratch / "elsewhere").mkdir()
    (scratch / "elsewhere" / "secret").write_text("s")
    walk = filetree.walk(root, filetree.Bounds(depth=5, entries=100, bytes=None))
    assert next(walk).rel == "a"
    os.rename(root / "a", scratch / "moved")
    (root / "a").symlink_to(scratch / "elsewhere", target_is_directory=True)
    with pytest.raises(OSError):                       # a link now: O_NOFOLLOW refuses it
        next(walk)
    (root / "a").unlink()
    os.rename(scratch / "moved", root / "a")
    walk = filetree.walk(root, filetree.Bounds(depth=5, entries=100, bytes=None))
    assert next(walk).rel == "a"
    os.rename(root / "a", scratch / "moved")
    os.rename(scratch / "elsewhere", root / "a")        # another folder under the same name
    with pytest.raises(filetree.TreeChanged):
        next(walk)


# --------------------------------------------------------------------------- the kit's walks

def test_digest_copy_and_pack_of_a_folder_1200_deep(scratch):
    sub = scratch / "student"
    sub.mkdir()
    (sub / "attention.py").write_text("x = 1\n")
    deep_chain(sub, 1200)
    digest = resume.submission_digest(sub)
    assert digest is not None
    stage = scratch / "stage" / "job"
    skipped = jobs.stage_copy(sub, stage)
    assert (stage / "attention.py").read_text() == "x = 1\n"
    assert [s for s in skipped if "nested too deep" in s] == ["/".join(["d"] * jobs.STAGE_MAX_DEPTH)
                                                              + "/ (nested too deep)"]
    assert resume.submission_digest(stage) == digest          # what is staged is what was keyed
    blob = cluster.pack(stage)
    cluster.unpack(blob, scratch / "unpacked")
    assert resume.submission_digest(scratch / "unpacked") == digest
    deep_file = sub
    for _ in range(3):
        deep_file = deep_file / "d"
    (deep_file / "notes.txt").write_text("changed")
    assert resume.submission_digest(sub) != digest            # a change within the copied depth counts


def test_intake_lists_a_folder_1200_deep(scratch):
    from autograder import contract
    sub = scratch / "student"
    deep_chain(sub, 1200)
    (sub / "attention.py").write_text("x = 1\n")
    found = intake.collect(sub, contract.select("ex1")).found["ex1"]
    assert found.source == "x = 1\n"


def test_the_class_listing_is_bounded(scratch, monkeypatch):
    for name in ("alice", "bob", "carol"):
        (scratch / name).mkdir()
    assert [e.student for e in discovery.discover(scratch).entries] == ["alice", "bob", "carol"]
    monkeypatch.setattr(discovery, "CLASS_BOUNDS", filetree.Bounds(depth=1, entries=2, bytes=None))
    with pytest.raises(filetree.TooLarge):
        discovery.discover(scratch)


# --------------------------------------------------------------------------- sweeps

@pytest.mark.skipif(not IS_ROOT, reason="files of another uid need root")
def test_the_user_sweep_removes_a_tree_deeper_than_recursion(scratch):
    uid = 54321
    top = deep_chain(scratch / "shared-tmp", PAST_RECURSION, name=LONG)
    os.chown(top, uid, uid)
    (scratch / "shared-tmp" / "theirs.txt").write_text("")
    os.chown(scratch / "shared-tmp" / "theirs.txt", uid, uid, follow_symlinks=False)
    (scratch / "shared-tmp" / "not-theirs.txt").write_text("")
    removed = users.remove_user_files(uid, (str(scratch / "shared-tmp"),))
    assert sorted(Path(p).name for p in removed) == sorted([LONG, "theirs.txt"])
    assert os.listdir(scratch / "shared-tmp") == ["not-theirs.txt"]


def test_a_failing_sweep_step_is_logged_and_never_raises(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(isolation.lifetime, "kill_all_of_user", broken)
    monkeypatch.setattr(isolation.ipc, "sweep_user", lambda uid: [])
    monkeypatch.setattr(isolation.users, "remove_user_files", broken)
    isolation.UserLevel().sweep(users.WorkerIds(54321, 54321), None)
    err = capsys.readouterr().err
    assert err.count("sweep: uid 54321: RecursionError") == 2


def test_a_worker_home_of_any_depth_is_removed(scratch, capsys):
    home = scratch / "ag-worker-x"
    deep_chain(home, PAST_RECURSION, name=LONG)
    users.remove_home(str(home))
    assert not home.exists()
    assert capsys.readouterr().err == ""
