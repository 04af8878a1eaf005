"""What FlashInfer's attention adapters (test_flashinfer*.py) share: its plan/run scratch and its plan arguments
for a case's scores."""
import pytest
import torch

import flashinfer

workspace = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")  # FlashInfer's plan/run scratch (its docs: 128 MB)


def plan_kwargs(case, q):
    """FlashInfer's plan arguments for a case's scores (q [..., heads_q, d]): causal, window_left (skipped where the
    window ends past the diagonal: its windows end there or nowhere), softcap, scale, ALiBi (skipped where its
    distances differ from the case's or the slopes are not the ones FlashInfer computes from the head count), the
    dtypes."""
    c = case.case_json
    left, right = c.get("window_left", -1), c.get("window_right", -1)
    if right > 0:
        pytest.skip(f"{case.name}: FlashInfer's windows end at the diagonal (right 0) or nowhere")
    kw = dict(causal=right == 0, pos_encoding_mode="NONE", window_left=left,
              logits_soft_cap=c.get("softcap", 0.0) or None, sm_scale=c["scale"], q_data_type=q.dtype,
              kv_data_type=q.dtype)
    if "alibi_slopes" in case.input_names:
        if right != 0 or c["seqlen_q"] != c["seqlen_k"]:  # run 18: its bias is slope (j - i), i counted from the
            # first query token (include/flashinfer/attention/variants.cuh): the case's -slope |i + sk - sq - j| only
            # where j <= i and sq = sk (non-causal: 1.6 off in o; sq < sk: lse off by slope (sk - sq), o right)
            pytest.skip(f"{case.name}: FlashInfer's ALiBi is slope (j - i) from the first query token: the case's "
                        "only for causal rows with seqlen_q == seqlen_k")
        if not torch.allclose(case.inputs("alibi_slopes", like=q).float(),
                              flashinfer.utils.get_alibi_slopes(q.shape[-2], device="cuda")):
            pytest.skip(f"{case.name}: ALiBi slopes other than FlashInfer's 2^(-8h/n)")
        kw["pos_encoding_mode"] = "ALIBI"
    return kw
