"""Exercise 4 — Causal masking and generation.

A language model predicts token ``t+1`` from tokens ``0 … t`` only, so position ``i``
must not attend to any later position ``j > i``: that is a *causal* mask. Padding
masks hide the filler positions of shorter sequences in a batch. At generation time
the keys and values of past positions are cached, and each new token attends to the
whole cache.

Conventions used throughout (they are also what the grader checks):

* Masks are ``torch.bool`` tensors and ``True`` means "may attend" (the convention of
  ``torch.nn.functional.scaled_dot_product_attention``). Fill masked scores with
  ``-inf`` or a large negative number such as ``-1e9`` — both are accepted. Every
  query row has at least one allowed key.
* Keep the input's dtype and device, stay differentiable (no ``.detach()``,
  ``.numpy()`` or ``.item()`` on the computation path), and never modify inputs in
  place.
* The device rule is checked by running ``create_causal_mask(n, device="meta")``,
  ``combine_masks``, ``causal_self_attention`` and ``attend_next`` on tensors of
  PyTorch's ``meta`` device (shapes and dtypes, no values; the grader's stand-in for a
  GPU): use torch operations only on the computation path (no
  ``.item()``, ``.tolist()``, ``bool(tensor)``), create any new tensor on the input's
  device (``device=x.device``) and give fill values as Python floats
  (``masked_fill(~mask, float("-inf"))``).
* Not allowed: ``torch.nn.MultiheadAttention``,
  ``torch.nn.functional.multi_head_attention_forward``,
  ``torch.nn.functional.scaled_dot_product_attention`` and ``torch.nn.Transformer*``.
* No dropout. This file must be self-contained: import only the standard library,
  ``numpy``, ``torch`` and ``matplotlib``.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Union

import torch


def create_causal_mask(
    seq_len: int,
    device: Optional[Union[str, torch.device]] = None,
) -> torch.Tensor:
    """The causal (lower-triangular) self-attention mask.

    Args:
        seq_len: number of positions ``n``.
        device: device of the result (``None``: the default device).

    Returns:
        A ``torch.bool`` tensor of shape ``(n, n)`` with ``mask[i, j] = (j <= i)``:
        ``True`` on and below the diagonal (position ``i`` may attend to itself and
        to earlier positions), ``False`` above it.
    """
    ### BEGIN SOLUTION
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
    return torch.tril(ones)                                     # (n, n)
    ### END SOLUTION


def create_padding_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """Key mask that hides the padding at the end of shorter sequences.

    Args:
        lengths: ``(B,)`` integer tensor; sequence ``b`` has ``lengths[b]`` real
            tokens (``1 <= lengths[b] <= max_len``) followed by padding.
        max_len: the padded length.

    Returns:
        A ``torch.bool`` tensor of shape ``(B, max_len)`` on ``lengths``' device with
        ``mask[b, j] = (j < lengths[b])``.
    """
    ### BEGIN SOLUTION
    positions = torch.arange(max_len, device=lengths.device)    # (max_len,)
    return positions[None, :] < lengths[:, None]                # (B, max_len)
    ### END SOLUTION


def combine_masks(causal: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """Combine a causal mask and a padding (key) mask.

    Args:
        causal: ``(n, n)`` boolean mask (e.g. from :func:`create_causal_mask`).
        padding: ``(B, n)`` boolean key mask (e.g. from :func:`create_padding_mask`).

    Returns:
        A ``torch.bool`` tensor of shape ``(B, n, n)`` with
        ``out[b, i, j] = causal[i, j] and padding[b, j]``. Inputs are not modified.
    """
    ### BEGIN SOLUTION
    return causal[None, :, :] & padding[:, None, :]             # (B, n, n)
    ### END SOLUTION


def causal_self_attention(
    x: torch.Tensor,
    W_q: torch.Tensor,
    W_k: torch.Tensor,
    W_v: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Single-head causal self-attention with plain projection matrices.

    Args:
        x: ``(B, n, d_model)``.
        W_q: ``(d_model, d_k)``; the queries are ``Q = x @ W_q`` (no bias).
        W_k: ``(d_model, d_k)``; ``K = x @ W_k``.
        W_v: ``(d_model, d_v)``; ``V = x @ W_v``.

    Returns:
        ``(output, weights)``: ``weights (B, n, n) = softmax(Q Kᵀ / √d_k)`` with every
        entry above the diagonal masked (exactly 0), and ``output (B, n, d_v) =
        weights @ V``. Same dtype and device as ``x``, differentiable with respect to
        ``x`` and the three matrices.
    """
    ### BEGIN SOLUTION
    Q = x @ W_q                                                 # (B, n, d_k)
    K = x @ W_k                                                 # (B, n, d_k)
    V = x @ W_v                                                 # (B, n, d_v)
    n, d_k = x.size(1), Q.size(-1)

    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)           # (B, n, n)
    mask = create_causal_mask(n, device=x.device)               # (n, n), broadcasts over B
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)                     # (B, n, n)
    output = weights @ V                                        # (B, n, d_v)
    return output, weights
    ### END SOLUTION


def attend_next(
    q_t: torch.Tensor,
    K_cache: torch.Tensor,
    V_cache: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One decoding step with a key/value cache.

    The newest position (query ``q_t``) attends to all ``t`` cached positions, which
    already include the newest position itself. No mask is needed: the cache holds
    only the past. Row ``t−1`` of :func:`causal_self_attention` equals
    ``attend_next`` with the first ``t`` keys and values.

    Args:
        q_t: ``(B, d_k)``, the query of the newest position.
        K_cache: ``(B, t, d_k)``, the keys of positions ``0 … t−1``.
        V_cache: ``(B, t, d_v)``, the values of positions ``0 … t−1``.

    Returns:
        ``(output, weights)``: ``weights (B, t) = softmax(K_cache q_t / √d_k)`` and
        ``output (B, d_v) = Σ_j weights[:, j] V_cache[:, j]``. Same dtype and device
        as ``q_t``, differentiable; inputs are not modified.
    """
    ### BEGIN SOLUTION
    d_k = q_t.size(-1)
    q = q_t.unsqueeze(1)                                        # (B, 1, d_k)
    scores = q @ K_cache.transpose(-2, -1) / math.sqrt(d_k)     # (B, 1, t)
    weights = torch.softmax(scores, dim=-1)                     # (B, 1, t)
    output = weights @ V_cache                                  # (B, 1, d_v)
    return output.squeeze(1), weights.squeeze(1)                # (B, d_v), (B, t)
    ### END SOLUTION


def greedy_generate(
    model: Callable[[torch.Tensor], torch.Tensor],
    prompt: torch.Tensor,
    max_new_tokens: int,
) -> torch.Tensor:
    """Greedy decoding with a causal language model.

    Args:
        model: a callable (typically an ``nn.Module``) mapping token ids
            ``(B, t)`` (integer tensor) to logits ``(B, t, vocab)``, where the logits at
            position ``i`` predict token ``i+1``. Call it on the whole sequence so far
            at every step (no truncation, no cache); inside ``torch.no_grad()`` is
            cheaper (the tokens are the same either way, so it is not graded). Do not
            change the model (no training, no ``.eval()``/``.train()`` switch needed).
        prompt: ``(B, t)`` integer tensor (usually ``torch.long``), ``t >= 1``. Not
            modified.
        max_new_tokens: how many tokens to append (``0``: the result is the prompt;
            a copy is kinder to the caller, who may change it later, but not graded).

    Returns:
        ``(B, t + max_new_tokens)`` tensor on ``prompt``'s device; its first ``t``
        columns are ``prompt``. Its dtype: ``torch.long`` for a ``torch.long`` prompt
        (keeping another integer prompt's dtype is kinder, but not graded). At each
        step the appended token of row ``b`` is the argmax over the vocabulary of the
        logits at the **last** position; on ties the lowest token index wins (what
        ``torch.argmax`` does).
    """
    ### BEGIN SOLUTION
    ids = prompt.clone()                                        # (B, t)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids)                                 # (B, t', vocab)
            next_id = logits[:, -1, :].argmax(dim=-1, keepdim=True)   # (B, 1)
            ids = torch.cat([ids, next_id.to(ids.dtype)], dim=1)      # (B, t'+1)
    return ids
    ### END SOLUTION
