# -*- coding: utf-8 -*-
"""Exercise 1 — Scaled dot-product attention (written on Windows, tabs for indentation)."""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np
import torch


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
	arr = np.asarray(x, dtype=np.float64)
	stable = arr - np.amax(arr, axis=axis, keepdims=True)
	num = np.exp(stable)
	den = num.sum(axis=axis, keepdims=True)
	return num / den


def _scores(Q, K, mask):
	d_k = Q.shape[-1]
	S = np.matmul(Q, np.swapaxes(K, -2, -1)) / np.sqrt(float(d_k))
	if mask is not None:
		S = np.where(mask, S, -1e9)
	return S


def scaled_dot_product_attention_np(Q, K, V, mask=None):
	Q = np.array(Q, dtype=np.float64)
	K = np.array(K, dtype=np.float64)
	V = np.array(V, dtype=np.float64)
	weights = softmax(_scores(Q, K, mask), axis=-1)
	return np.matmul(weights, V), weights


def attention_backward_np(d_output, Q, K, V, mask=None):
	Q = np.array(Q, dtype=np.float64)
	K = np.array(K, dtype=np.float64)
	V = np.array(V, dtype=np.float64)
	dY = np.array(d_output, dtype=np.float64)
	inv = 1.0 / np.sqrt(float(Q.shape[-1]))
	A = softmax(_scores(Q, K, mask), axis=-1)
	KT = np.swapaxes(K, -2, -1)
	AT = np.swapaxes(A, -2, -1)
	dV = AT @ dY
	dA = dY @ np.swapaxes(V, -2, -1)
	# softmax backward: dS = A * (dA - rowsum(A * dA))
	dS = A * dA - A * np.sum(A * dA, axis=-1, keepdims=True)
	dQ = (dS @ K) * inv
	dK = (np.swapaxes(dS, -2, -1) @ Q) * inv
	return dQ, dK, dV


def numerical_gradient(f, x, eps=1e-6):
	x = np.asarray(x, dtype=np.float64)
	out = np.zeros(x.shape, dtype=np.float64)
	for index in np.ndindex(*x.shape):
		step = np.zeros_like(x)
		step[index] = eps
		out[index] = (f(x + step) - f(x - step)) / (2 * eps)
	return out


def scaled_dot_product_attention(Q, K, V, mask=None):
	scores = torch.matmul(Q, torch.transpose(K, -2, -1)) * (1.0 / math.sqrt(Q.shape[-1]))
	if mask is not None:
		scores = scores.masked_fill(mask == False, -1e9)  # noqa: E712
	weights = torch.nn.functional.softmax(scores, dim=-1)
	return torch.matmul(weights, V), weights
