"""A Gradescope replica in Docker: build ``autograder.zip``'s image as Gradescope does.

    python -m autograder build --verify docker [--base-image ubuntu:22.04] [--rebuild-image]
    python -m autograder.packaging.verify.replica_runs dist/autograder.zip [same options]   # an existing zip

Gradescope unzips ``autograder.zip`` into ``/autograder/source`` of a base image (Ubuntu 22.04),
runs ``setup.sh`` there once as root, and saves the image; each submission is then graded in
a fresh container of it (:mod:`autograder.packaging.verify.replica_runs`). This module builds that
image:

* the base: the image named by ``--base-image`` (pulled when missing), else
  :data:`DEFAULT_BASE`, made once with ``debootstrap --variant=minbase bookworm`` and
  ``docker import`` (Debian 12: the closest base that can be built without a registry);
* ``setup.sh`` runs in a container of the base with the host's network and, when the build
  machine has them, its pip settings (``PIP_*`` variables, pip config files, the local folders
  they name, bound read-only), its extra CA certificates and a local torch wheel folder: the
  replica cannot show the downloads Gradescope makes from Ubuntu's archive and PyTorch's index;
* ``docker commit`` saves it as ``attention-autograder-replica:<zip sha256[:16]>``, labelled
  with the zip's full sha256, and is reused while the zip does not change;
* the environment (the part of ``setup.sh`` above its ``# ---- the kit's own steps`` line: apt,
  the virtual environment, torch, requirements.txt; a minute here) is run once on the base
  without the kit and saved as ``attention-autograder-env:<sha256[:16]>`` of that part, the
  requirements, the base and the host's pip settings. A zip's image starts from it and runs
  the zip's **whole** ``setup.sh`` again (its environment steps then find everything installed:
  ten seconds), so every step of every zip's ``setup.sh`` runs, the kit's steps on an image no
  kit has touched. ``--rebuild-image`` builds both afresh.

The ``==`` lines of ``setup.sh`` are shown as they come, with the time since the start.
"""
from __future__ import annotations

import configparser
import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from autograder.packaging.zips import unpack

DEFAULT_BASE = "attention-autograder-base:bookworm"
IMAGE_REPO = "attention-autograder-replica"
ZIP_LABEL = "attention-autograder.zip-sha256"
KEEP_IMAGES = 3                 # replica images kept (newest first); each adds the kit to an environment
ENV_REPO = "attention-autograder-env"
ENV_LABEL = "attention-autograder.environment-sha256"
KEEP_ENVIRONMENTS = 2           # environment images kept (newest first); each is ~1.4 GB
KIT_STEPS = "# ---- the kit's own steps"     # setup.sh: the environment's steps end above this line
ENV_SCRIPT_NAME = "setup-environment.sh"     # the environment's steps, run beside requirements.txt
DEBIAN_MIRROR = "http://deb.debian.org/debian"
PIP_CONFIG_FILES = ("/etc/pip.conf", "/etc/xdg/pip/pip.conf")
PROXY_VARS = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
EXTRA_CERTS = Path("/usr/local/share/ca-certificates")
# Never bound into the build container: the container's own CA store is rebuilt there.
NO_BIND_UNDER = ("/etc/ssl", "/etc/ca-certificates", "/usr", "/proc", "/sys", "/dev")


class ReplicaError(RuntimeError):
    """The replica cannot be built or run here; the message says why."""


# --------------------------------------------------------------------------- docker


def docker(*args: str, timeout: float | None = 600, check: bool = True,
           **kwargs) -> subprocess.CompletedProcess:
    """``docker ARGS`` with captured text output; raises :class:`ReplicaError` on failure."""
    try:
        proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, **kwargs)
    except FileNotFoundError:
        raise ReplicaError("the `docker` command is not installed") from None
    except subprocess.TimeoutExpired:
        raise ReplicaError(f"`docker {' '.join(args[:2])}` took longer than {timeout} s") from None
    if check and proc.returncode != 0:
        raise ReplicaError(f"`docker {' '.join(args[:3])}` failed: {proc.stderr.strip()[-1500:]}")
    return proc


def docker_available() -> tuple[bool, str]:
    """Whether a Docker daemon answers here, and if not, why."""
    if shutil.which("docker") is None:
        return False, "the `docker` command is not installed"
    try:
        proc = docker("info", "--format", "{{.ServerVersion}}", timeout=30, check=False)
    except ReplicaError as exc:
        return False, str(exc)
    if proc.returncode != 0 or not proc.stdout.strip():
        return False, "no Docker daemon answers: " + proc.stderr.strip()[-300:]
    return True, ""


def image_exists(name: str) -> bool:
    return docker("image", "inspect", name, check=False, timeout=60).returncode == 0


def _image_label(name: str, label: str) -> str | None:
    """``label`` of image ``name`` (None: no such image or label)."""
    proc = docker("image", "inspect", "-f", f'{{{{index .Config.Labels "{label}"}}}}', name,
                  check=False, timeout=60)
    value = proc.stdout.strip()
    return value if proc.returncode == 0 and value and value != "<no value>" else None


# --------------------------------------------------------------------------- the base image


def debian_mirror() -> str:
    """The Debian archive this machine's apt uses (``URIs:`` of a deb822 source, or sources.list)."""
    sources = sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    for path in sources:
        for stanza in path.read_text(errors="replace").split("\n\n"):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", stanza, re.M)
            if uris and suites and "bookworm" in suites[1].split() and "security" not in uris[1]:
                return uris[1]
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*.list"))]:
        if path.is_file():
            match = re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+bookworm\s", path.read_text(errors="replace"), re.M)
            if match:
                return match[1]
    return DEBIAN_MIRROR


def make_debian_base(name: str = DEFAULT_BASE, say: Callable[[str], None] = print) -> str:
    """``name``: a minimal Debian 12 root from debootstrap, imported into Docker (once)."""
    if image_exists(name):
        return name
    if shutil.which("debootstrap") is None:
        raise ReplicaError("no base image: install debootstrap (apt-get install -y debootstrap) "
                           "or name a base image with --base-image")
    mirror = debian_mirror()
    say(f"replica: base image {name}: debootstrap --variant=minbase bookworm from {mirror} (~1 min)")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="replica-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        proc = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(rootfs), mirror],
                              capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            raise ReplicaError("debootstrap failed: " + (proc.stdout + proc.stderr).strip()[-1500:])
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["docker", "import", "--change", 'CMD ["bash"]', "-", name],
                                  stdin=tar.stdout, capture_output=True, text=True, timeout=1800)
        tar.stdout.close()
        tar.wait()
        if imported.returncode != 0 or tar.returncode != 0:
            raise ReplicaError("docker import failed: " + imported.stderr.strip()[-1500:])
    say(f"replica: base image {name} ready ({time.monotonic() - start:.0f} s)")
    return name


def base_image(name: str | None, say: Callable[[str], None] = print) -> str:
    """The instructor's base image (pulled when missing), else :data:`DEFAULT_BASE`."""
    if not name or name == DEFAULT_BASE:
        return make_debian_base(DEFAULT_BASE, say)
    if not image_exists(name):
        say(f"replica: docker pull {name}")
        docker("pull", name, timeout=1800)
    return name


# --------------------------------------------------------------------------- the build machine's pip


@dataclass
class HostPip:
    """What ``setup.sh`` gets from the build machine so that pip can work here."""
    env: dict[str, str] = field(default_factory=dict)      # PIP_*, proxies, AUTOGRADER_TORCH_*
    binds: list[str] = field(default_factory=list)         # existing paths, bound read-only
    certs: list[Path] = field(default_factory=list)        # extra CA certificates to install

    def docker_args(self) -> list[str]:
        args: list[str] = []
        for path in self.binds:
            args += ["-v", f"{path}:{path}:ro"]
        for key, value in sorted(self.env.items()):
            args += ["-e", f"{key}={value}"]
        return args


def _local_paths(value: str) -> list[str]:
    """Absolute local paths named in a pip setting (``/dir``, ``file:///dir``; space separated)."""
    found = []
    for token in value.split():
        path = token.removeprefix("file://")
        if path.startswith("/") and os.path.exists(path):
            found.append(os.path.realpath(path) if os.path.islink(path) else path)
    return found


def _bindable(path: str) -> bool:
    return not any(path == p or path.startswith(p + "/") for p in NO_BIND_UNDER)


def torch_wheel_folder(folders: list[str], version: str | None) -> str | None:
    """The first of ``folders`` holding a CPU torch wheel (of ``version`` when given)."""
    for folder in folders:
        if os.path.isdir(folder):
            for wheel in sorted(Path(folder).glob("torch-*.whl")):
                public = (version or "").split("+")[0]
                if "+cpu" in wheel.name and (not public or wheel.name.startswith(f"torch-{public}+")):
                    return folder
    return None


def host_pip(torch_version: str | None, torch_find_links: str | None = None,
             torch_index: str | None = None) -> HostPip:
    """The build machine's pip settings, detected (nothing here is specific to one machine)."""
    host = HostPip()
    for key, value in os.environ.items():
        if key.startswith("PIP_") or key in PROXY_VARS:
            host.env[key] = value
    configs = [p for p in (*PIP_CONFIG_FILES, os.environ.get("PIP_CONFIG_FILE", "")) if p and os.path.isfile(p)]
    named: list[str] = []
    for key, value in host.env.items():
        named += _local_paths(value)
    for config in configs:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(config)
        except configparser.Error:
            continue
        for section in parser.sections():
            for value in parser[section].values():
                named += _local_paths(value)
    host.binds = sorted({p for p in configs + named if _bindable(p)})
    if torch_index:
        host.env["AUTOGRADER_TORCH_INDEX"] = torch_index
    folder = torch_find_links or os.environ.get("AUTOGRADER_TORCH_FIND_LINKS") or \
        torch_wheel_folder([p for p in host.binds if os.path.isdir(p)], torch_version)
    if folder:
        folder = os.path.abspath(folder)
        host.env["AUTOGRADER_TORCH_FIND_LINKS"] = folder
        if folder not in host.binds:
            host.binds.append(folder)
    if EXTRA_CERTS.is_dir():
        host.certs = sorted(p for p in EXTRA_CERTS.rglob("*.crt") if p.is_file())
    return host


# --------------------------------------------------------------------------- the image


_BUILD_SCRIPT = r"""
set -euo pipefail
if [ -d /tmp/replica-certs ]; then
    echo "== replica: the build machine's CA certificates (pip needs them here; Gradescope does not)"
    apt-get update -q && apt-get install -y -q --no-install-recommends ca-certificates
    cp /tmp/replica-certs/*.crt /usr/local/share/ca-certificates/ && update-ca-certificates
    rm -rf /tmp/replica-certs
fi
mkdir -p /autograder/submission /autograder/results
cd /autograder/source
./setup.sh
"""


_ENV_SCRIPT = r"""
set -euo pipefail
if [ -d /tmp/replica-certs ]; then
    apt-get update -q && apt-get install -y -q --no-install-recommends ca-certificates
    cp /tmp/replica-certs/*.crt /usr/local/share/ca-certificates/ && update-ca-certificates
    rm -rf /tmp/replica-certs
fi
cd /autograder/source
bash ./""" + ENV_SCRIPT_NAME + r"""
cd /
rm -rf /autograder
"""


def environment_part(setup_text: str) -> str | None:
    """The steps of ``setup.sh`` that install the environment (every line above
    :data:`KIT_STEPS`), or None when it has no such line (its image is then built whole)."""
    head, found, _ = setup_text.partition("\n" + KIT_STEPS)
    return head + "\n" if found else None


def zip_sha256(zip_path: Path) -> str:
    return hashlib.sha256(Path(zip_path).read_bytes()).hexdigest()


def image_name(sha: str) -> str:
    return f"{IMAGE_REPO}:{sha[:16]}"


def _stream(proc: subprocess.Popen, log: Path, say: Callable[[str], None], start: float) -> None:
    """Copy ``proc``'s output to ``log``; show ``==`` lines (setup.sh's steps) as they come."""
    with open(log, "w", encoding="utf-8", errors="replace") as out:
        for line in proc.stdout:
            out.write(line)
            if line.startswith("=="):
                say(f"  [{time.monotonic() - start:5.0f} s] {line.rstrip()}")


def build_image(zip_path: Path, base: str | None = None, rebuild: bool = False,
                torch_find_links: str | None = None, torch_index: str | None = None,
                log_dir: Path | None = None, say: Callable[[str], None] = print) -> tuple[str, float | None]:
    """The replica's image for ``zip_path`` and the seconds its build took (None: reused)."""
    sha = zip_sha256(zip_path)
    name = image_name(sha) + ("" if not base else "-" + re.sub(r"[^a-z0-9_.-]+", "-", base.lower())[:40])
    with _build_lock(say):
        if not rebuild and _image_label(name, ZIP_LABEL) == sha:
            say(f"replica: reusing image {name} (built from this zip, sha256 {sha[:16]})")
            return name, None
        return _build_image(zip_path, name, sha, base, rebuild, torch_find_links, torch_index, log_dir, say)


BUILD_LOCK_NAME = "attention-autograder-replica.lock"     # in the temporary folder


@contextlib.contextmanager
def _build_lock(say: Callable[[str], None]):
    """One replica build at a time on this machine (the Docker daemon is the machine's): a
    second build of the same zip waits, then reuses the first one's images instead of building
    them again beside it (the kit's own tests start one early, tests/replica_prebuild.py). A
    lock file that cannot be opened (another user's) is no lock, nor is one where ``fcntl`` is
    missing (Windows)."""
    try:
        import fcntl
        fd = os.open(Path(tempfile.gettempdir()) / BUILD_LOCK_NAME,
                     os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("replica: another replica build is running on this machine: waiting for it")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _build_image(zip_path: Path, name: str, sha: str, base: str | None, rebuild: bool,
                 torch_find_links: str | None, torch_index: str | None, log_dir: Path | None,
                 say: Callable[[str], None]) -> tuple[str, float | None]:
    base_name = base_image(base, say)
    with tempfile.TemporaryDirectory(prefix="replica-build-") as tmp:
        stage = Path(tmp)
        source = stage / "autograder" / "source"
        unpack(zip_path, source)
        version = _zip_torch_version(source / "setup.sh")
        host = host_pip(version, torch_find_links, torch_index)
        if host.certs:
            (stage / "certs").mkdir()
            for cert in host.certs:
                shutil.copy(cert, stage / "certs" / cert.name)
        log = (log_dir or stage) / "replica-build.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        start_from = _environment_image(stage, base_name, host, rebuild, log.with_name("replica-environment.log"),
                                        say) or base_name
        say(f"replica: building {name} from {zip_path} on {start_from} (setup.sh as root; "
            f"binds: {', '.join(host.binds) or 'none'}; torch from "
            f"{host.env.get('AUTOGRADER_TORCH_FIND_LINKS') or host.env.get('AUTOGRADER_TORCH_INDEX') or 'setup.sh default'})")
        seconds = _run_and_commit(start_from, _BUILD_SCRIPT, stage, host, name, (ZIP_LABEL, sha), log, say,
                                  "setup.sh")
    say(f"replica: image {name} built (setup.sh in {seconds:.0f} s)")
    prune_images(KEEP_IMAGES, say)
    return name, seconds


def _environment_image(stage: Path, base_name: str, host: HostPip, rebuild: bool, log: Path,
                       say: Callable[[str], None]) -> str | None:
    """The image of ``setup.sh``'s environment steps on ``base_name`` (built when missing or
    ``rebuild``); None when ``setup.sh`` does not mark where its kit's own steps begin. Its key
    leaves out comment lines (each build names its own build id in one)."""
    source = stage / "autograder" / "source"
    steps = environment_part((source / "setup.sh").read_text(encoding="utf-8"))
    if steps is None:
        say(f"replica: setup.sh has no {KIT_STEPS!r} line: its whole image is built")
        return None
    requirements = source / "requirements.txt"
    if not requirements.is_file():
        say("replica: the zip has no requirements.txt: its whole image is built")
        return None
    commands = "\n".join(line for line in steps.splitlines() if not line.lstrip().startswith("#"))
    base_id = docker("image", "inspect", "-f", "{{.Id}}", base_name).stdout.strip()   # a re-pulled tag differs
    digest = hashlib.sha256()
    for part in (base_id, _ENV_SCRIPT, commands, requirements.read_text(encoding="utf-8"), *host.docker_args(),
                 *(p.read_text(errors="replace") for p in host.certs), *map(_bound_content, host.binds)):
        digest.update(part.encode() + b"\0")
    key = digest.hexdigest()
    name = f"{ENV_REPO}:{key[:16]}"
    if not rebuild and _image_label(name, ENV_LABEL) == key:
        say(f"replica: reusing the environment image {name}")
        return name
    (source / ENV_SCRIPT_NAME).write_text(steps, encoding="utf-8")
    say(f"replica: building the environment image {name}: setup.sh's steps above {KIT_STEPS!r}, on {base_name}")
    try:
        seconds = _run_and_commit(base_name, _ENV_SCRIPT, stage, host, name, (ENV_LABEL, key), log, say,
                                  "the environment's steps")
    finally:
        (source / ENV_SCRIPT_NAME).unlink()
    say(f"replica: environment image {name} built ({seconds:.0f} s)")
    prune_images(KEEP_ENVIRONMENTS, say, repo=ENV_REPO)
    return name


def _bound_content(path: str) -> str:
    """What a bound host path holds, for the environment's key: a file's text (pip's config),
    a folder's file names and sizes (a wheel folder)."""
    where = Path(path)
    try:
        if where.is_file():
            return where.read_text(errors="replace")[:1_000_000]
        if where.is_dir():
            return "\n".join(f"{p.name} {p.stat().st_size}" for p in sorted(where.iterdir())[:10_000])
    except OSError as exc:
        return f"unreadable: {exc}"
    return "missing"


def _run_and_commit(image: str, script: str, stage: Path, host: HostPip, name: str, label: tuple[str, str],
                    log: Path, say: Callable[[str], None], what: str) -> float:
    """Run ``script`` in a container of ``image`` holding ``stage``'s ``autograder/`` (and its
    certificates), with the host's network and pip settings; commit it as ``name`` labelled
    ``label``; the seconds ``script`` took."""
    cid = docker("create", "--network", "host", *host.docker_args(), image, "bash", "-c", script).stdout.strip()
    try:
        docker("cp", str(stage / "autograder"), f"{cid}:/")
        if host.certs:
            docker("cp", str(stage / "certs"), f"{cid}:/tmp/replica-certs")
        start = time.monotonic()
        proc = subprocess.Popen(["docker", "start", "-a", cid], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
        _stream(proc, log, say, start)
        proc.wait()
        seconds = time.monotonic() - start
        status = docker("inspect", "-f", "{{.State.ExitCode}}", cid).stdout.strip()
        if status != "0":
            tail = log.read_text(errors="replace")[-3000:]
            raise ReplicaError(f"{what} failed in the replica (exit {status}); log {log}:\n{tail}")
        committing = time.monotonic()
        docker("commit", "--change", f"LABEL {label[0]}={label[1]}", "--change", "WORKDIR /autograder",
               "--change", 'CMD ["bash"]', cid, name, timeout=1800)
        say(f"replica: docker commit took {time.monotonic() - committing:.0f} s")
        return seconds
    finally:
        docker("rm", "-f", cid, check=False)


def prune_images(keep: int, say: Callable[[str], None] = print, repo: str = IMAGE_REPO) -> None:
    """Remove all but the ``keep`` newest images of ``repo`` (the replica's: one per zip; never
    the base). An environment image that a kept replica image is built on is only untagged:
    its layers stay (and take disk) until no image is built on it."""
    listed = docker("images", repo, "--format", "{{.Repository}}:{{.Tag}}", check=False).stdout.split()
    for old in listed[keep:]:                    # `docker images` lists the newest first
        if docker("rmi", old, check=False).returncode == 0:
            say(f"replica: removed the old image {old}")


def _zip_torch_version(setup: Path) -> str | None:
    match = re.search(r'^TORCH_VERSION="([^"]+)"', setup.read_text(), re.M)
    return match[1] if match else None

