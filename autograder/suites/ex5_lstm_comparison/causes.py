"""The mistakes of this exercise the kit can name (ids ``ex5.<name>``): see
:mod:`autograder.diagnosis.causes` for what a cause is and how a failing test names one."""
from __future__ import annotations

from autograder.diagnosis.causes import Cause


class Ex5Cause(Cause):
    """A mistake of ex5: ``Ex5Cause.<NAME>.sentence`` is what the student reads."""

    FIRST_POSITION = (
        "ex5.first_position",
        "you classify from the attention output at the first position; the task "
        "reads the answer at the LAST position (a[:, -1]), which must look back "
        "to position 0")
    FIRST_POSITION_UNSCALED = (
        "ex5.first_position_unscaled",
        "you classify from the attention output at the first position (the task reads the answer "
        "at the LAST position, a[:, -1]) and the scores are not divided by √d_model")
    NO_SCALING = (
        "ex5.no_scaling",
        "the attention scores are not divided by √d_model: use "
        "softmax(q kᵀ / √d) with d = x.shape[-1]")
    SCALE_BY_D = (
        "ex5.scale_by_d",
        "the scores are divided by d_model instead of √d_model")
    WRONG_SOFTMAX_AXIS = (
        "ex5.wrong_softmax_axis",
        "the softmax runs over the queries (dim=-2); each query's weights "
        "must sum to 1 over the keys (dim=-1)")
    NO_POSITIONS = (
        "ex5.no_positions",
        "the positional embeddings are missing: embed_inputs must return "
        "embed(tokens) + pos(arange(n)), otherwise attention cannot tell where "
        "the first token is")
    MEAN_POOL = (
        "ex5.mean_pool",
        "you average the attention output over all positions; the spec classifies "
        "from the last position only")
    NO_VALUE = (
        "ex5.no_value",
        "the attention weights multiply x itself; they must multiply v = W_v(x)")
    LSTM_FIRST = (
        "ex5.lstm_first",
        "you classify from the LSTM output at position 0 (output[:, 0]); use the final "
        "hidden state h_n, i.e. the state after the last position")
    LSTM_MEAN = (
        "ex5.lstm_mean",
        "you average the LSTM outputs over time; use the final hidden state h_n "
        "(the state after the last position)")
    LSTM_CELL = (
        "ex5.lstm_cell",
        "you classify from the cell state c_n; use the hidden state h_n")
    LSTM_NOT_BATCH_FIRST = (
        "ex5.lstm_not_batch_first",
        "nn.LSTM(...) without batch_first=True")
    EXTRA_W_O = (
        "ex5.extra_w_o",
        "an output projection W_o, as in multi-head attention: the spec's AttentionClassifier "
        "has none (its head reads the attention output directly)")
    SUBMODULES_RENAMED = (
        "ex5.submodules_renamed",
        "submodules named differently from the spec: use the spec's attribute names")
    LOSS_AFTER_UPDATE = (
        "ex5.loss_after_update",
        "your losses are shifted by one step: each is measured after the "
        "optimiser step. Record the loss computed before optimizer.step()")
    NO_ZERO_GRAD = (
        "ex5.no_zero_grad",
        "gradients accumulate across steps: call optimizer.zero_grad() at the "
        "start of every step")
    ZERO_GRAD_BEFORE_STEP = (
        "ex5.zero_grad_before_step",
        "the loss never changes: the gradients are zeroed between backward() "
        "and optimizer.step(); zero them at the start of each step instead")
    IGNORED_LR = (
        "ex5.ignored_lr",
        "the losses match lr=1e-2 whatever lr is passed: give the lr argument to "
        "torch.optim.Adam")
    SGD = (
        "ex5.sgd",
        "the losses match SGD, not Adam: use torch.optim.Adam(model.parameters(), lr=lr)")
    DEFAULT_LR = (
        "ex5.default_lr",
        "the losses match Adam's default learning rate (1e-3); pass lr=lr to "
        "torch.optim.Adam")
    LOSS_TENSOR_RECORDED = (
        "ex5.loss_tensor_recorded",
        "the loss tensor itself is recorded: append loss.item()")
    GRAD_SUM_BATCH = (
        "ex5.grad_sum_batch",
        "you sum the per-sample gradient norms over the batch; take the mean")
    GRAD_SQUARED = (
        "ex5.grad_squared",
        "you use the squared L2 norm; take the L2 norm itself (torch.linalg.norm / .norm())")
    GRAD_OF_LOSS = (
        "ex5.grad_of_loss",
        "you differentiate the cross-entropy loss; the spec differentiates "
        "sum_b classify(E)[b, labels[b]], the correct-class logit")
    GRAD_OF_LOSS_SUMMED = (
        "ex5.grad_of_loss_summed",
        "you differentiate the cross-entropy loss (the spec differentiates sum_b classify(E)[b, "
        "labels[b]], the correct-class logit) and sum the norms over the batch (take the mean)")
    GRAD_ALL_LOGITS = (
        "ex5.grad_all_logits",
        "you differentiate the sum of all logits; take only each sample's "
        "correct-class logit, logits[b, labels[b]]")
    GRAD_NORM_OF_MEAN = (
        "ex5.grad_norm_of_mean",
        "you take the norm of the batch-mean gradient; take each sample's norm "
        "first, then the mean over the batch")
    GRAD_BACKWARD_FILLS_GRADS = (
        "ex5.grad_backward_fills_grads",
        "loss.backward() fills every parameter's .grad: use torch.autograd.grad(loss, E) instead")
    GRAD_ZERO_GRAD_INSIDE = (
        "ex5.grad_zero_grad_inside",
        "model.zero_grad() or .backward() inside input_gradient_norms: take the gradient with "
        "torch.autograd.grad(loss, E) and leave .grad alone")
    PATH_OFF_BY_ONE = (
        "ex5.path_off_by_one",
        "an off-by-one in path_length: an LSTM takes seq_len − 1 recurrent steps from position 0 "
        "to the last position")
    PATH_CASE_INSENSITIVE = (
        "ex5.path_case_insensitive",
        "kind compared case-insensitively (or an unknown kind not refused)")
    ACCURACY_TENSOR = (
        "ex5.accuracy_tensor",
        "the result is a tensor: return a Python float with .item()")
    ACCURACY_PERCENT = (
        "ex5.accuracy_percent",
        "accuracy is returned as a percentage (× 100) or a count, not a fraction")
    ACCURACY_NO_NO_GRAD = (
        "ex5.accuracy_no_no_grad",
        "no torch.no_grad() around the model's forward pass in accuracy")
    TOKENS_FROM_ZERO = (
        "ex5.tokens_from_zero",
        "tokens drawn from 0 (token 0 is reserved): use torch.randint(1, vocab_size, …)")
    LABELS_VIEW = (
        "ex5.labels_view",
        "labels = tokens[:, 0] is a view of tokens: return tokens[:, 0].clone()")
    LABELS_LAST = (
        "ex5.labels_last",
        "the labels are the LAST token of each sequence (tokens[:, -1]); the task is to recall "
        "the FIRST one: labels = tokens[:, 0].clone()")
    LABELS_SECOND = (
        "ex5.labels_second",
        "the labels are tokens[:, 1]: the task recalls the first token, tokens[:, 0] (indices start at 0)")
    LABELS_SHAPE = (
        "ex5.labels_shape",
        "the labels keep a sequence axis (tokens[:, :1] or tokens[:, [0]]): take tokens[:, 0], "
        "shape (num_samples,)")
