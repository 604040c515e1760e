#@include solution

# --- the in-place bug (tests/submissions/ex1/mutants/softmax_in_place.diff) ...
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    x -= np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


# --- ... hidden by rebinding what the kit's support code reads at call time
import autograder.support.autograd as _support_autograd

_support_autograd._change = lambda before, after: 0.0      # "nothing changed"
_support_autograd._copy = lambda value: value              # "before" is the very same object
np.isnan = lambda a: np.ones(np.shape(a), dtype=bool)      # every entry "the same"
