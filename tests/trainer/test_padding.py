"""Every stage's model drops the padding mask of right-padded training batches (attention then
takes its faster causal path) and must compute exactly what it computed with the mask; batches
whose padding is on the left, and generation, keep their mask."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def models_and_backbone_masks(tiny_model_path):
    """The tiny model as a stage loads it, the same model as transformers runs it (mask and all),
    and the masks their backbones are called with."""
    from trainer.common import load_model
    from trainer.config import TrainConfig

    model, _ = load_model(tiny_model_path, TrainConfig(device="cpu"))
    plain, _ = load_model(tiny_model_path, TrainConfig(device="cpu"), drop_padding_mask=False)
    seen: list = []
    for m in (model, plain):
        m.model.register_forward_pre_hook(
            lambda module, args, kwargs: seen.append(kwargs.get("attention_mask")), with_kwargs=True
        )
    return model, plain, seen


def _batch(left: bool):
    import torch

    torch.manual_seed(0)
    ids = torch.randint(5, 200, (3, 40))
    lengths = torch.tensor([40, 31, 22])
    mask = (torch.arange(40)[None] < lengths[:, None]).long()
    if left:
        mask = mask.flip(1)
    labels = torch.where(mask.bool(), ids, torch.full_like(ids, -100))
    return ids * mask, mask, labels


def test_a_right_padded_batch_runs_without_its_mask_and_gives_the_same_loss_and_gradients(models_and_backbone_masks):
    import torch

    model, plain, seen = models_and_backbone_masks
    ids, mask, labels = _batch(left=False)
    seen.clear()
    fast = model(input_ids=ids, attention_mask=mask, labels=labels)
    fast.loss.backward()
    assert seen == [None]

    masked = plain(input_ids=ids, attention_mask=mask, labels=labels)  # transformers as it is: the mask goes in
    masked.loss.backward()
    assert seen[-1] is not None
    assert torch.allclose(fast.loss, masked.loss, atol=1e-6)
    real = mask.bool()
    assert torch.allclose(fast.logits[real], masked.logits[real], atol=1e-5)
    for a, p in zip(model.parameters(), plain.parameters(), strict=True):
        assert torch.allclose(a.grad, p.grad, atol=1e-6)
    model.zero_grad()
    plain.zero_grad()


def test_a_left_padded_batch_keeps_its_mask(models_and_backbone_masks):
    model, _, seen = models_and_backbone_masks
    ids, mask, labels = _batch(left=True)
    seen.clear()
    model(input_ids=ids, attention_mask=mask, labels=labels)
    assert seen[0] is not None and seen[0].shape == mask.shape


def test_generation_keeps_its_mask_and_its_output(models_and_backbone_masks):
    import torch

    model, plain_model, seen = models_and_backbone_masks
    ids, mask, _ = _batch(left=True)
    model.eval()
    plain_model.eval()
    try:
        with torch.no_grad():
            seen.clear()
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=4, do_sample=False)
            assert seen and all(m is not None for m in seen)
            plain = plain_model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=4, do_sample=False)
    finally:
        model.train()
        plain_model.train()
    assert torch.equal(out, plain)


def test_stage_0_trains_padding_free_when_asked_with_the_losses_of_padded_batches(tiny_model_path, tmp_path):
    from trainer.base import train_base
    from trainer.stage_configs import load_config

    def losses(padding_free: bool) -> list[float]:
        cfg = load_config(
            "base",
            "tiny-cpu",
            {
                "model": str(tiny_model_path),
                "out": str(tmp_path / str(padding_free)),
                "rows": 48,
                "copy_share": 0.5,
                "max_steps": 3,
                "per_device_batch_size": 8,
                "logging_steps": 1,
                "save_steps": 100,
                "warmup_steps": 0,
                "copy_probe": 0,
                # fp32 everywhere: under bf16 autocast (auto on CPUs with bf16 instructions) the
                # joined and the padded batches sum in another order and differ in the 3rd decimal
                "precision": "fp32",
                **({"padding_free": True} if padding_free else {}),
            },
        )
        assert cfg.padding_free is padding_free  # padded unless asked
        result = train_base(cfg, progress=False)
        return [round(row["loss"], 4) for row in result.log if "loss" in row]

    joined = losses(True)
    assert len(joined) == 3 and joined == losses(False)
