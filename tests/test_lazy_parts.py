"""What torch and matplotlib load on first use is loaded before student code is called, and
never by the grader itself.

The first call on the meta device imports hundreds of modules (seconds of work); inside a
student's call it counted against the call's timeout and failed correct submissions under
load (the device probe of ex1, seen in CI). The zygote loads those parts
(``autograder.sandbox.worker.warm_up``, the exercises' ``warm_up``) before it forks a worker,
so a worker's first probe calls load nothing new; the grader, which needs none of it, never
imports them.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = r'''
import json, sys
from autograder.sandbox import worker
worker.warm_up()                    # what the zygote does before it forks the workers
import numpy as np
import torch
from autograder.support import probes

class Heads(torch.nn.Module):                       # a student's module, as the probes see it
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.lstm = torch.nn.LSTM(8, 8, batch_first=True)
    def forward(self, x):
        scores = self.proj(x) @ x.transpose(-1, -2) / 8 ** 0.5
        mask = torch.tril(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device))
        weights = torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)
        return self.lstm(weights @ x)[0]

before = set(sys.modules)
probes.on_meta(Heads(), [np.ones((2, 5, 8), dtype=np.float32)], dtype="float64")
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
fig.colorbar(ax.imshow(np.eye(4)), ax=ax)
fig.canvas.draw()
print(json.dumps(sorted(set(sys.modules) - before)))
'''


def test_first_meta_call_and_first_drawing_load_no_module():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"},
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    heavy = [m for m in loaded if m.split(".")[0] in ("sympy", "mpmath")
             or m.startswith(("torch._meta", "torch._decomp", "torch._refs", "torch._prims",
                              "matplotlib.font_manager"))]
    assert not heavy, f"first use loaded {len(loaded)} modules in the student's call, e.g. {heavy[:10]}"
    assert len(loaded) < 40, loaded


NO_DYNAMO = r'''
import json, sys
import numpy as np
import torch
from autograder.sandbox import lazy_dynamo, worker

def early(x): return x + 1
early_wrapped = torch._disable_dynamo(early)          # wrapped when torch was imported
assert lazy_dynamo.install() > 100                     # torch's own wrappers, found
worker.warm_up(("meta",))                              # what the zygote does for ex1-ex4
from autograder.support import probes

def late(x): return x * 2
late_wrapped = torch._disable_dynamo(late)             # wrapped afterwards (as a dispatch mode is)

class Heads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
    def forward(self, x):
        scores = self.proj(x) @ x.transpose(-1, -2) / 8 ** 0.5
        mask = torch.tril(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device))
        return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ x

x = torch.ones(3)
report = probes.on_meta(Heads(), [np.ones((2, 5, 8), dtype=np.float32)])
values = [early_wrapped(x).tolist(), late_wrapped(x).tolist()]
before_training = "torch._dynamo" in sys.modules
weight = torch.nn.Parameter(torch.zeros(3))             # a student's training does not load it
optimizer = torch.optim.Adam([weight], lr=0.1)
weight.sum().backward()
optimizer.step()
after_training = "torch._dynamo" in sys.modules
import torch._dynamo                                    # as torch.compile does first
def disabled(x): return early_wrapped(x).sin() + late_wrapped(x).cos()
def plain(x): return early(x).sin() + late(x).cos()
print(json.dumps({"report": report, "values": values, "before_training": before_training,
                  "after_training": after_training,
                  "breaks": [torch._dynamo.explain(disabled)(x).graph_break_count,
                             torch._dynamo.explain(plain)(x).graph_break_count],
                  "torch_disabled": [bool(getattr(getattr(f, "__dynamo_disable"), "_torchdynamo_disable", False))
                                     for f in (early, late)]}))
'''


def test_meta_calls_load_no_dynamo_until_something_compiles_then_torch_disables_as_it_would():
    """``lazy_dynamo``: the zygote's meta warm-up, a student's meta calls (ex1-ex4) and an
    optimizer's step never import torch._dynamo (0.6-1 s on a grading's critical path);
    functions torch wraps to keep TorchDynamo out (before or after the install) give the same
    values, and once something loads torch._dynamo (``torch.compile`` does) TorchDynamo skips
    them as torch's own wrapper makes it do (a graph break where the function is called)."""
    done = subprocess.run([sys.executable, "-c", NO_DYNAMO], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"},
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["report"]["error"] is None and seen["report"]["outputs"][0]["device"] == "meta", seen["report"]
    assert seen["report"]["outputs"][0]["shape"] == [2, 5, 8], seen["report"]
    assert seen["values"] == [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
    assert seen["before_training"] is False, "a meta call imported torch._dynamo"
    assert seen["after_training"] is False, "an optimizer's step imported torch._dynamo"
    assert seen["torch_disabled"] == [True, True], "torch's disabled versions were not put in place"
    disabled_breaks, plain_breaks = seen["breaks"]
    assert disabled_breaks >= 1 and plain_breaks == 0, seen["breaks"]


TRAIN = r"""
import json, sys
import torch
from autograder.sandbox import lazy_dynamo
installed = sys.argv[1] == "install" and lazy_dynamo.install() > 0
graph_breaks = []

def train(make_optimizer, steps=5):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    optimizer = make_optimizer(model.parameters())
    x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
    for _ in range(steps):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return [p.detach().double().flatten().tolist() for p in model.parameters()]

runs = {"adam": train(lambda p: torch.optim.Adam(p, lr=0.05)),
        "sgd": train(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True)),
        "adamw": train(lambda p: torch.optim.AdamW(p, lr=0.05, amsgrad=True))}
loaded = "torch._dynamo" in sys.modules
import torch._dynamo                                    # as torch.compile does first
torch._dynamo.graph_break = lambda *a, **k: graph_breaks.append(1)
runs["adam_after_dynamo"] = train(lambda p: torch.optim.Adam(p, lr=0.05), steps=2)
print(json.dumps({"installed": installed, "dynamo_loaded": loaded, "runs": runs,
                  "graph_breaks": len(graph_breaks)}))
"""


def test_optimizer_steps_load_no_dynamo_and_train_exactly_as_torch_does():
    """``lazy_dynamo`` replaces torch's optimizer-step wrapper, whose only use of torch._dynamo
    is a graph break (nothing outside TorchDynamo's tracing): with it installed, Adam, SGD and
    AdamW train to the same bits as torch's own and load no torch._dynamo; once torch._dynamo
    is loaded, every step goes through torch's wrapper again (its two graph breaks)."""
    def run(mode):
        done = subprocess.run([sys.executable, "-c", TRAIN, mode], cwd=ROOT, capture_output=True, text=True,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])
    lazy, torch_own = run("install"), run("plain")
    assert lazy["installed"] and not torch_own["installed"]
    assert lazy["dynamo_loaded"] is False, "an optimizer's step imported torch._dynamo"
    assert torch_own["dynamo_loaded"] is True                  # what torch's wrapper does
    assert lazy["runs"] == torch_own["runs"]                   # every parameter, to the bit
    assert lazy["graph_breaks"] == torch_own["graph_breaks"] == 2 * 2


GRADER = r'''
import sys
from pathlib import Path
from autograder import contract
from autograder.grading import GradeRequest, grade
outcome = grade(GradeRequest(submission=Path(sys.argv[1]), exercises=contract.select(sys.argv[2])))
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("sympy", "mpmath")
               or m.startswith(("torch._dynamo", "autograder.sandbox.worker", "autograder.support.figures",
                                "autograder.support.probes", "matplotlib.figure")))
dynamo = sorted(m for m in sys.modules if m.split(".")[0] in ("sympy", "mpmath") or m.startswith("torch._dynamo"))
print(outcome.score, heavy[:10] if sys.argv[2] == "ex1,ex2,ex3,ex4" else dynamo[:10])
'''


@pytest.mark.parametrize("exercises, score", [("ex1,ex2,ex3,ex4", "80.0"), ("ex1,ex2,ex3,ex4,ex5,ex6", "120.0")])
def test_the_grader_never_loads_what_only_student_calls_need(exercises, score):
    """The meta device's imports (torch._dynamo, sympy), the worker's modules and matplotlib's
    drawing are loaded by the zygote, not by the grading process (ex1 to ex4: ex2's figures
    are drawn and read in the worker; the grader's reference of ex2 is ``top_attended``, and
    ``reference.visualize`` imports matplotlib only to draw). ex5 and ex6 train the reference
    in the grader; their optimizers' steps load no torch._dynamo either (``lazy_dynamo``)."""
    done = subprocess.run([sys.executable, "-c", GRADER, str(ROOT / "solutions"), exercises], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == f"{score} []", done.stdout[-2000:]


CHOSEN = r'''
import json, sys
from autograder import cli
before = set(sys.modules)
cli.build_parser(sys.argv[1])
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith("autograder"))))
'''
# The subcommands' own packages (what building the command line for another must not import).
SUBCOMMAND_PACKAGES = ("autograder.batch", "autograder.batching", "autograder.staff", "autograder.audit",
                       "autograder.scaffold", "autograder.packaging")


@pytest.mark.parametrize("command", ["grade", "check", "batch"])
def test_the_command_line_imports_only_the_chosen_subcommand(command):
    """`grade` (Gradescope's path) and `check` (students') build their command line without
    importing batch, Dask, the Docker replica, the audit or the scaffold; `batch` does not
    import the audit, the scaffold or the exports either."""
    done = subprocess.run([sys.executable, "-c", CHOSEN, command], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    allowed = {"batch": ("autograder.batch", "autograder.batching", "autograder.staff")}.get(command, ())
    foreign = [m for m in loaded if m.startswith(SUBCOMMAND_PACKAGES) and not m.startswith(allowed)]
    assert not foreign, f"{command}'s command line imports {foreign}"


WARM_ORDER = r'''
import json, sys
from autograder.sandbox import ModuleSource, Sandbox, SandboxConfig, StudentModules, startup
SOURCE = ("import sys\n"
          "AT_IMPORT = {m: m in sys.modules for m in ('sympy', 'matplotlib.backends.backend_agg',\n"
          "                                           'matplotlib.figure', 'autograder.support.figures')}\n"
          "def at_import(): return AT_IMPORT\n")
config = SandboxConfig(isolation="process", worker_start="fork")
needs = {"first": (), "second": ("figures",), "third": ("meta",)}      # as open_sandbox makes it
box = Sandbox([ModuleSource(m, f"{m}.py", SOURCE) for m in needs], config, startup.choose(config, needs=needs))
box.start()
student = StudentModules(box, list(needs))
seen = {m: getattr(student, m).at_import() for m in sys.argv[1].split(",")}   # each in its own worker
box.close()
print(json.dumps(seen))
'''


@pytest.mark.parametrize("order", ["first,second,third", "third,second,first"])
def test_each_worker_is_forked_once_its_own_warm_ups_are_loaded_and_the_first_waits_for_no_other(order):
    """Forked workers: what each student module's calls load on first use (its exercise's
    warm-ups) is loaded by the zygote before that module's worker is forked, in whatever order
    the modules are entered; the first module's worker is forked before the parts that only
    later modules need (ex1's worker does not wait for ex5's meta device, nor for matplotlib's
    figure and the kit's figure inspector, which only a drawing exercise's worker holds)."""
    done = subprocess.run([sys.executable, "-c", WARM_ORDER, order], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"}, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(seen["second"][m] for m in ("matplotlib.backends.backend_agg", "matplotlib.figure")), seen
    assert seen["third"]["sympy"], seen
    if order.startswith("first"):
        assert not any(seen["first"].values()), seen
    # the kit's figure inspector came with the figures warm-up too, but no worker shows the
    # kit's modules to student code (worker.hide_kit_modules): its presence is not observable
    assert not any(seen[m]["autograder.support.figures"] for m in seen), seen


PLOTTING = r'''
import json, sys
from pathlib import Path
from autograder import contract, intake
from autograder.grading import open_sandbox
from autograder.sandbox import SandboxConfig, StudentModules
seen = {}
for chosen in ("ex1,ex4", "ex3"):                   # one zygote: ex3's file comes second
    exercises = contract.select(chosen)
    submission = intake.collect(Path(sys.argv[1]), exercises)
    box = open_sandbox(submission, SandboxConfig(isolation=sys.argv[2], worker_start="fork"), exercises)
    box.start()
    student = StudentModules(box, [ex.module for ex in exercises])
    seen.update({ex.module: getattr(student, ex.module).report() for ex in exercises})   # a worker each
    box.close()
print(json.dumps(seen))
'''
AT_IMPORT = "import sys\nLOADED = 'matplotlib.figure' in sys.modules\n"
DRAW = ("    fig, ax = plt.subplots()\n    ax.imshow([[0.0, 1.0], [1.0, 0.0]])\n    fig.canvas.draw()\n"
        "    return [LOADED, len(fig.axes)]\n")
PLOTTING_FILES = {
    "attention.py": AT_IMPORT + "import importlib\n\ndef report():\n"         # no import statement
                    + "    plt = importlib.import_module('matplotlib' + '.pyplot')\n" + DRAW,
    "causal.py": '"""You may import only numpy, torch and matplotlib."""\n' + AT_IMPORT   # named, not imported
                 + "def report():\n    return [LOADED, 0]\n",
    "multihead.py": AT_IMPORT + "from matplotlib import pyplot as plt\n\ndef report():\n" + DRAW,
}


@pytest.mark.parametrize("level", ["process", *(["namespaces"] if os.geteuid() == 0 else [])])
def test_a_file_that_imports_a_plotting_library_finds_it_loaded_and_any_file_can_draw(level, tmp_path):
    """The drawing part (matplotlib's figure and axes, a first drawing) is loaded by the zygote
    for a worker whose exercise draws (ex2, ex6: above) or whose file imports a plotting
    library (a notebook's plots in ex3 or ex4), not for the others: a file that only names
    matplotlib has none of it. A file that imports pyplot without an import statement loads it
    in its own worker and draws as well, at this level (the namespaces level's root of its own
    holds what matplotlib reads)."""
    for name, text in PLOTTING_FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", PLOTTING, str(tmp_path), level], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"},
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"attention": [False, 1], "causal": [False, 0], "multihead": [True, 1]}, seen


@pytest.mark.parametrize("source, parts", [
    ("import matplotlib.pyplot as plt\n", ("meta", "figures")),
    ("def f():\n    from matplotlib import pyplot\n", ("meta", "figures")),
    ("import seaborn as sns, numpy\n", ("meta", "figures")),
    ("import pylab\n", ("meta", "figures")),
    ('"""Use numpy, torch and matplotlib."""\nimport numpy as np  # matplotlib later\n', ("meta",)),
    ("from .matplotlib import x\nimport matplotlibx\n", ("meta",)),
    ("import matplotlib.pyplot as plt\ndef broken(:\n", ("meta",)),          # the worker reports it
])
def test_the_drawing_part_follows_import_statements_only(source, parts):
    """What intake reads of a file's imports (in the parse it makes for banned APIs anyway)
    decides whether its worker gets the drawing part."""
    from autograder import contract
    from autograder.intake import scan
    from autograder.sandbox.backends import parts_for
    imports = scan(source, contract.BY_ID["ex4"]).imports
    assert parts_for(("meta",), imports) == parts
    assert parts_for(("figures",), imports) == ("figures",)


BATCH = r'''
import sys
from autograder.cli import main
code = main(["batch", sys.argv[1], "--out", sys.argv[2], "--exercises", "ex1", "--jobs", "1", "--no-progress"])
print(code, "torch" in sys.modules)
'''


def test_the_batch_process_itself_never_loads_torch(tmp_path):
    """`batch` chooses the isolation level, starts its graders, reads what they wrote and
    writes the gradebook and the report: none of it needs torch, whose import (1.5 s of CPU)
    would come before the first grader could start. Its graders load torch, not it."""
    student = tmp_path / "class" / "s1"
    student.mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "ex1_attention" / "attention.py", student / "attention.py")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([sys.executable, "-c", BATCH, str(tmp_path / "class"), str(tmp_path / "out" / "grades.csv")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "0 False", done.stdout[-2000:]
    assert (tmp_path / "out" / "results" / "s1" / "results.json").is_file()


ENGINE_FREE = '''
import sys
_ENGINE = sorted(m for m in sys.modules if m.split(".")[0] in ("pytest", "_pytest", "pluggy")
                 or m.startswith(("autograder.grading", "autograder.plugin", "autograder.intake")))
if _ENGINE:
    raise RuntimeError(f"the worker holds the grading engine: {_ENGINE[:5]}")
'''


def test_grade_forks_its_zygote_before_it_imports_the_engine(tmp_path):
    """`grade` starts its zygote as soon as torch is loaded, so the zygote warms up while the
    grader imports pytest and the engine (not after), and its workers hold neither: a solution
    that raises at import if pytest, the grading engine or intake is in its process keeps full
    marks. (That the zygote never runs before results.json's placeholder is written: the
    ``zygote`` moment of tests/test_lifetime.py.)"""
    student = tmp_path / "sub"
    student.mkdir()
    solution = (ROOT / "solutions" / "ex1_attention" / "attention.py").read_text(encoding="utf-8")
    (student / "attention.py").write_text(solution + ENGINE_FREE, encoding="utf-8")
    out = tmp_path / "results.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(student), "--exercises", "ex1",
                           "--results", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    graded = json.loads(out.read_text(encoding="utf-8"))
    assert graded["score"] == 20, (graded["output"][-2000:], done.stderr[-2000:])


def test_a_part_loaded_before_a_fork_is_not_loaded_again_after_it(monkeypatch):
    """A batch's warm grader loads every part once; the zygote of each grader it forks asks
    for them again and finds them loaded (the figures' warm-up is not drawn once more)."""
    from autograder.sandbox import worker
    calls: list[int] = []
    monkeypatch.setitem(worker.WARM_UPS, "probe", lambda: calls.append(os.getpid()))
    monkeypatch.setattr(worker, "_warmed", set())
    worker.warm_up(("probe", "probe"))
    pid = os.fork()
    if pid == 0:                                        # the forked grader's zygote
        worker.warm_up(("probe",))
        os._exit(len(calls))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 1 and calls == [os.getpid()]
