"""The ground truth for Kimi Delta Attention: a plain recurrent loop in fp32 (or fp64).

Per head, with state S ∈ R^{K×V} and α_t = exp(g_t) ∈ (0, 1]^K:

    S ← Diag(α_t) S
    S ← S + (β_t k_t) (v_t − Sᵀ k_t)ᵀ          # the delta rule
    o_t = Sᵀ (scale · q_t)

Also the gate that produces g (A_log, dt_bias, softplus; or the bounded "safe" gate) and the
short causal depthwise convolution applied to q, k, v, with its decode-time state.
Layout everywhere: q, k, g `[B, T, H, K]`; v `[B, T, H, V]`; beta `[B, T, H]`;
state `[N, H, K, V]`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kimmy_swarm.kernels.kda._checks import KDAInputError, check_inputs, l2norm, seq_bounds

__all__ = ["causal_conv1d", "kda_gate", "naive_kda"]


def compute_dtype(x: torch.Tensor) -> torch.dtype:
    """fp32 for half types and fp32; fp64 stays fp64 (used for tight gradient checks)."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _recurrent(
    q: torch.Tensor,  # (T, ..., H, K), already scaled
    k: torch.Tensor,  # (T, ..., H, K)
    v: torch.Tensor,  # (T, ..., H, V)
    g: torch.Tensor,  # (T, ..., H, K)
    beta: torch.Tensor,  # (T, ..., H)
    state: torch.Tensor,  # (..., H, K, V)
) -> tuple[torch.Tensor, torch.Tensor]:
    """The recurrence over time; any leading batch dims after T run together."""
    outs = []
    for t in range(q.shape[0]):
        state = state * g[t].exp()[..., None]  # (..., H, K, V)
        pred = torch.einsum("...hk,...hkv->...hv", k[t], state)  # (..., H, V)
        delta = beta[t][..., None] * (v[t] - pred)  # (..., H, V)
        state = state + k[t][..., None] * delta[..., None, :]  # (..., H, K, V)
        outs.append(torch.einsum("...hk,...hkv->...hv", q[t], state))  # (..., H, V)
    o = torch.stack(outs) if outs else v.new_zeros(v.shape)
    return o, state


def naive_kda(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm: bool = False,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Kimi Delta Attention, one token at a time (the reference every fast path must match).

    Args:
        q: queries `[B, T, H, K]`.
        k: keys `[B, T, H, K]`.
        v: values `[B, T, H, V]`.
        g: log-space per-channel decay `[B, T, H, K]` (≤ 0; α = exp(g)).
        beta: delta-rule write strength `[B, T, H]`.
        scale: query scale; default `K ** -0.5`.
        initial_state: `[N, H, K, V]` state to start from (N = B, or sequences when packed).
        output_final_state: also return the state after the last token, `[N, H, K, V]` fp32.
        use_qk_l2norm: L2-normalize q and k per head (eps 1e-6) before use.
        cu_seqlens: `[N + 1]` offsets of packed sequences along T (then B must be 1).

    Returns:
        `(o, final_state)`: o `[B, T, H, V]` in v's dtype; final_state or None.

    Example:
        >>> q = k = torch.nn.functional.normalize(torch.randn(1, 8, 2, 16), dim=-1)
        >>> o, s = naive_kda(q, k, torch.randn(1, 8, 2, 16), -torch.rand(1, 8, 2, 16),
        ...                  torch.rand(1, 8, 2), output_final_state=True)
        >>> o.shape, s.shape
        (torch.Size([1, 8, 2, 16]), torch.Size([1, 2, 16, 16]))
    """
    shp = check_inputs(q, k, v, g, beta, initial_state, cu_seqlens)
    dt = compute_dtype(v)
    scale = shp.K**-0.5 if scale is None else scale
    qf, kf, vf, gf, bf = (x.to(dt) for x in (q, k, v, g, beta))
    if use_qk_l2norm:
        qf, kf = l2norm(qf), l2norm(kf)
    qf = qf * scale
    if cu_seqlens is None:  # equal lengths: the whole batch steps together
        state = qf.new_zeros(shp.B, shp.H, shp.K, shp.V)
        if initial_state is not None:
            state = state + initial_state.to(dt)
        tb = (x.transpose(0, 1) for x in (qf, kf, vf, gf, bf))  # (T, B, ...)
        o, state = _recurrent(*tb, state)  # (T, B, H, V), (B, H, K, V)
        return o.transpose(0, 1).to(v.dtype), state if output_final_state else None
    outs, finals = [], []
    for n, (b, (s, e)) in enumerate(_sequences(shp.B, shp.T, cu_seqlens)):
        state = qf.new_zeros(shp.H, shp.K, shp.V)
        if initial_state is not None:
            state = state + initial_state[n].to(dt)
        o, state = _recurrent(qf[b, s:e], kf[b, s:e], vf[b, s:e], gf[b, s:e], bf[b, s:e], state)
        outs.append(o)
        finals.append(state)
    o = torch.cat(outs).view(shp.B, shp.T, shp.H, shp.V)  # (B, T, H, V)
    final = torch.stack(finals) if output_final_state else None  # (N, H, K, V)
    return o.to(v.dtype), final


def _sequences(
    b: int, t: int, cu_seqlens: torch.Tensor | None
) -> list[tuple[int, tuple[int, int]]]:
    """(batch row, (start, end)) for each sequence, in state order."""
    if cu_seqlens is None:
        return [(i, (0, t)) for i in range(b)]
    return [(0, se) for se in seq_bounds(t, cu_seqlens)]


def kda_gate(
    f: torch.Tensor,
    A_log: torch.Tensor,
    dt_bias: torch.Tensor | None = None,
    *,
    lower_bound: float | None = None,
) -> torch.Tensor:
    """The KDA decay gate g (log space, fp32) from the low-rank projection f.

    Default: `g = −exp(A_log[h]) · softplus(f + dt_bias)`. With `lower_bound` (the "safe
    gate", e.g. −5): `g = lower_bound · sigmoid(exp(A_log[h]) · (f + dt_bias))`, so every
    step decays by at most `exp(lower_bound)` per channel.

    Args:
        f: projection output `[..., H, K]`.
        A_log: per-head log decay rate, H elements (checkpoint shape `[1, 1, H, 1]`).
        dt_bias: bias with H·K elements, or None.
        lower_bound: the safe gate's bound (< 0), or None for the softplus gate.

    Returns:
        g `[..., H, K]` in fp32 (fp64 for fp64 f), every entry ≤ 0.

    Raises:
        KDAInputError: A_log / dt_bias sizes do not match f, or lower_bound ≥ 0.
    """
    h, kd = f.shape[-2:]
    if A_log.numel() != h:
        raise KDAInputError(f"A_log has {A_log.numel()} elements; expected H = {h}")
    acc = torch.promote_types(f.dtype, torch.float32)  # fp32 at least, fp64 stays fp64
    x = f.to(acc)
    if dt_bias is not None:
        if dt_bias.numel() != h * kd:
            raise KDAInputError(f"dt_bias has {dt_bias.numel()} elements; expected H·K = {h * kd}")
        x = x + dt_bias.to(acc).view(h, kd)
    a = A_log.to(acc).view(h, 1).exp()  # (H, 1)
    if lower_bound is None:
        return -a * F.softplus(x)
    if lower_bound >= 0:
        raise KDAInputError(f"lower_bound must be < 0; got {lower_bound}")
    return lower_bound * torch.sigmoid(a * x)


_SHIFTED_SUM_MAX_T = 16  # up to this many tokens, causal_conv1d skips F.conv1d


def causal_conv1d(
    x: torch.Tensor,
    weight: torch.Tensor,
    *,
    state: torch.Tensor | None = None,
    activation: str | None = "silu",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Short causal depthwise convolution (kernel W, no bias) with a decode-time state.

    `y_t[c] = act(Σ_i weight[c, i] · x_{t−W+1+i}[c])`, where inputs before the sequence start
    come from `state` (zeros when None). Feeding tokens one at a time with the returned state
    equals one call on the whole sequence.

    Args:
        x: input `[B, T, D]` (D = H·K, the projected q, k or v).
        weight: `[D, W]` or the checkpoint's `[D, 1, W]`.
        state: the last W − 1 inputs `[B, D, W − 1]`, or None.
        activation: "silu" or None.

    Returns:
        `(y [B, T, D] in x's dtype, new_state [B, D, W − 1])`.

    Raises:
        KDAInputError: shapes disagree or the activation is unknown.
    """
    w = weight.reshape(weight.shape[0], weight.shape[-1])  # (D, W)
    b, t, d = x.shape
    width = w.shape[-1]
    if w.shape[0] != d:
        raise KDAInputError(f"weight has {w.shape[0]} channels; x has D = {d}")
    if activation not in ("silu", None):
        raise KDAInputError(f"activation {activation!r} is not one of 'silu', None")
    if state is None:
        state = x.new_zeros(b, d, width - 1)
    if tuple(state.shape) != (b, d, width - 1):
        raise KDAInputError(f"state has shape {list(state.shape)}; expected {[b, d, width - 1]}")
    xs = torch.cat([state.to(x.dtype), x.transpose(1, 2)], dim=-1)  # (B, D, W − 1 + T)
    acc = torch.promote_types(x.dtype, torch.float32)  # fp32 at least, fp64 stays fp64
    xs_acc, w_acc = xs.to(acc), w.to(acc)
    if t <= _SHIFTED_SUM_MAX_T:
        # Decode and short chunks: W shifted multiply-adds beat conv1d's setup cost (20×
        # at T = 1 on CPU, where fp64 conv1d has no fast path).
        y = xs_acc[..., :t] * w_acc[:, :1]
        for i in range(1, width):
            y = y + xs_acc[..., i : i + t] * w_acc[:, i : i + 1]
    else:
        y = F.conv1d(xs_acc, w_acc[:, None, :], groups=d)
    y = y.transpose(1, 2)  # (B, T, D)
    if activation == "silu":
        y = F.silu(y)
    return y.to(x.dtype), xs[..., xs.shape[-1] - (width - 1) :]
