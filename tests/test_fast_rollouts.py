"""helpers.training.fast_rollouts: the cheaper rollouts and log-probs sample and learn from the same policy.

A tiny random Llama in float64 (SmolLM2's tokenizer) with a LoRA whose B is not zero, so that the
adapter changes the outputs. Float64 makes "equal" mean rounding: log-probs agree to 1e-10 (we see
2e-15). Gradients agree to 1e-5 in relative norm per tensor (we see up to 4e-7): transformers' LlamaRMSNorm computes in
float32 even in a float64 model, and summing the G rows' gradients before or after the shared prompt
pass rounds differently there. A wrong position, mask, merge or prompt moves log-probs by more than 1e-2.
"""

import pytest
import torch

from helpers.training import fast_rollouts

trl = pytest.importorskip("trl")
G = 3


@pytest.fixture(scope="module")
def policy(tiny_model_dir):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.padding_side = "left"
    torch.manual_seed(1)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float64)
    model = get_peft_model(
        base,
        LoraConfig(
            r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "up_proj"], lora_dropout=0.0, task_type="CAUSAL_LM"
        ),
    ).double()  # LoRA too
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.3)  # a trained-looking adapter: the LoRA matters
    return model.eval(), tokenizer


def batch(tokenizer, prompts, repeat=1):
    texts = [p for p in prompts for _ in range(repeat)]
    enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    return enc["input_ids"], enc["attention_mask"]


PROMPTS = ["What is 2 + 2?", "Name three prime numbers please.", "Hi"]  # three lengths: left padding


def test_prompt_groups_find_equal_rows_wherever_they_stand():
    ids = torch.tensor([[1, 2], [1, 2], [3, 4], [1, 2], [3, 4], [1, 2]])
    assert fast_rollouts.prompt_groups(ids, torch.ones_like(ids)) == [[0, 1, 3, 5], [2, 4]]
    mask = torch.tensor([[1, 1], [0, 1], [1, 1], [1, 1], [1, 1], [1, 1]])
    assert fast_rollouts.prompt_groups(ids, mask) == [[0, 3, 5], [1], [2, 4]]  # same tokens, other padding


def test_greedy_sample_equals_generate_token_for_token(policy):
    model, tokenizer = policy
    ids, mask = batch(tokenizer, PROMPTS, repeat=2)
    ours = fast_rollouts.sample(
        model,
        ids,
        mask,
        max_new_tokens=12,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        temperature=0.0,
    )
    with torch.no_grad():
        theirs = model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=12,
            do_sample=False,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    assert torch.equal(ours, theirs[:, ids.size(1) :])


def test_sampled_tokens_have_the_policys_log_probs(policy):
    """What the sampler drew each token from is the PEFT policy's own distribution (teacher-forced,
    temperature 0.7), for rows that end early and rows that run to the limit."""
    model, tokenizer = policy
    ids, mask = batch(tokenizer, PROMPTS, repeat=G)
    gen = torch.Generator().manual_seed(0)
    completion, logps = fast_rollouts.sample(
        model,
        ids,
        mask,
        max_new_tokens=10,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        temperature=0.7,
        generator=gen,
        return_logps=True,
    )
    done = completion == tokenizer.eos_token_id
    keep = (torch.cumsum(done.long(), 1) - done.long()) == 0  # up to and including the first EOS
    full = torch.cat([ids, completion], 1)
    full_mask = torch.cat([mask, keep.long()], 1)
    with torch.no_grad():
        logits = (
            model(input_ids=full, attention_mask=full_mask, position_ids=fast_rollouts._positions(full_mask)).logits[
                :, ids.size(1) - 1 : -1
            ]
            / 0.7
        )
    teacher = torch.log_softmax(logits, -1).gather(2, completion[..., None]).squeeze(2)
    assert keep.sum() > completion.size(0)  # tokens were drawn
    torch.testing.assert_close(logps[keep], teacher[keep], rtol=0, atol=1e-10)
    assert torch.all(logps[~keep] == 0)


def test_merged_policy_equals_the_lora_and_follows_it(policy):
    model, tokenizer = policy
    merged = fast_rollouts.MergedPolicy(model)
    ids, mask = batch(tokenizer, PROMPTS)
    with torch.no_grad():
        lora = model(input_ids=ids, attention_mask=mask).logits
        torch.testing.assert_close(merged.sync()(input_ids=ids, attention_mask=mask).logits, lora, rtol=0, atol=1e-10)
        b = next(p for n, p in model.named_parameters() if "lora_B" in n)
        b.add_(1.0)  # an optimizer step
        moved = model(input_ids=ids, attention_mask=mask).logits
        stale = merged.model(input_ids=ids, attention_mask=mask).logits
        fresh = merged.sync()(input_ids=ids, attention_mask=mask).logits
        b.sub_(1.0)
    assert (stale - moved).abs().max() > 1e-3  # not synced yet: the old policy
    torch.testing.assert_close(fresh, moved, rtol=0, atol=1e-10)


def test_merged_policy_refuses_a_plain_model(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    with pytest.raises(ValueError, match="plain LoRA"):
        fast_rollouts.MergedPolicy(AutoModelForCausalLM.from_pretrained(tiny_model_dir))


class _TRL:  # what TRL's method reads from its trainer (its profiling decorator: args, accelerator)
    temperature = 0.7
    model_kwarg_keys = {"logits_to_keep"}

    class args:  # noqa: N801
        report_to = ()


def _trl_logps(model, ids, mask, keep, entropy=True):
    return trl.GRPOTrainer._get_per_token_logps_and_entropies(_TRL(), model, ids, mask, keep, compute_entropy=entropy)


def _grpo_batch(model, tokenizer):
    """Prompt + completion ids and TRL's mask, groups of G with completions of different lengths."""
    ids, mask = batch(tokenizer, PROMPTS, repeat=G)
    completion = fast_rollouts.sample(
        model,
        ids,
        mask,
        max_new_tokens=30,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        temperature=1.5,
        generator=torch.Generator().manual_seed(3),
    )
    completion[1, 2] = tokenizer.eos_token_id  # one row of the first group ends early: its own bucket
    done = completion == tokenizer.eos_token_id
    keep = ((torch.cumsum(done.long(), 1) - done.long()) == 0).long()
    return torch.cat([ids, completion], 1), torch.cat([mask, keep], 1), completion.size(1)


def test_shared_prompt_logps_equal_trls_values_and_gradients(policy):
    model, tokenizer = policy
    ids, mask, keep = _grpo_batch(model, tokenizer)
    completion_mask = mask[:, -keep:].double()
    weights = torch.randn(ids.size(0), keep, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    results = []
    for fn in (
        lambda: _trl_logps(model, ids, mask, keep),
        lambda: fast_rollouts.shared_prompt_logps(model, ids, mask, keep, 0.7, compute_entropy=True),
    ):
        model.zero_grad()
        logps, entropies = fn()
        ((logps * weights * completion_mask).sum()).backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
        results.append((logps.detach() * completion_mask, entropies * completion_mask, grads))
    (trl_logps, trl_ent, trl_grads), (ours, our_ent, our_grads) = results
    torch.testing.assert_close(ours, trl_logps, rtol=0, atol=1e-10)
    torch.testing.assert_close(our_ent, trl_ent, rtol=0, atol=1e-10)
    assert completion_mask.sum(1).min() < keep  # some rows are shorter than the batch
    lengths = completion_mask.sum(1).long().tolist()
    assert len(fast_rollouts.length_buckets(lengths[:G])) > 1  # a group split into buckets of its own
    for name, grad in trl_grads.items():
        assert grad.abs().max() > 0
        assert (our_grads[name] - grad).norm() / grad.norm() < 1e-5, name


def test_shared_prompt_logps_share_the_prompt_of_a_shuffled_batch(policy):
    """TRL 0.22 shuffles a generated batch's rows before the loss. A bug: the groups were looked for as
    runs of consecutive rows, so after the shuffle almost every row had its own prompt pass (27 passes for
    4 prompts x 8 in a SmolLM2 step: the loss forward and backward 3x slower than needed). Now each
    distinct prompt has one pass, and the values and gradients are still TRL's."""
    model, tokenizer = policy
    ids, mask, keep = _grpo_batch(model, tokenizer)
    order = torch.randperm(ids.size(0), generator=torch.Generator().manual_seed(2))
    ids, mask = ids[order], mask[order]
    assert len(fast_rollouts.prompt_groups(ids[:, :-keep], mask[:, :-keep])) == len(PROMPTS)
    prompt_passes = []
    forward = model.forward

    def counted(*args, **kwargs):
        prompt_passes.append(kwargs.get("past_key_values") is None)
        return forward(*args, **kwargs)

    completion_mask = mask[:, -keep:].double()
    model.zero_grad()
    model.forward = counted
    try:
        ours, _ = fast_rollouts.shared_prompt_logps(model, ids, mask, keep, 0.7)
    finally:
        del model.forward
    (ours * completion_mask).sum().backward()
    our_grads = [p.grad.clone() for p in model.parameters() if p.requires_grad]
    model.zero_grad()
    theirs, _ = _trl_logps(model, ids, mask, keep, entropy=False)
    (theirs * completion_mask).sum().backward()
    assert sum(prompt_passes) == len(PROMPTS)  # one prompt pass per distinct prompt
    torch.testing.assert_close(ours.detach() * completion_mask, theirs.detach() * completion_mask, rtol=0, atol=1e-10)
    for ours_grad, p in zip(our_grads, (p for p in model.parameters() if p.requires_grad)):
        assert (ours_grad - p.grad).norm() / p.grad.norm() < 1e-5


def test_shared_prompt_logps_catch_a_wrong_prompt_share(policy):
    """The check above can fail: sharing the *first* group's prompt with every row is visibly wrong."""
    model, tokenizer = policy
    ids, mask, keep = _grpo_batch(model, tokenizer)
    wrong = ids.clone()
    wrong[:, :-keep] = ids[0, :-keep]
    with torch.no_grad():
        right, _ = _trl_logps(model, ids, mask, keep, entropy=False)
        bad, _ = fast_rollouts.shared_prompt_logps(model, wrong, mask, keep, 0.7)
    assert (bad - right).abs().max() > 1e-2


@pytest.fixture(scope="module")
def trainers(tiny_model_dir, tmp_path_factory):
    """TRL's GRPOTrainer and the course's, on the same float64 policy with the same LoRA."""
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    from helpers.training.trainer import CourseGRPOTrainer

    out = tmp_path_factory.mktemp("trainers")
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": p}]} for p in PROMPTS])
    args = GRPOConfig(
        output_dir=str(out),
        use_cpu=True,
        report_to="none",
        seed=0,
        per_device_train_batch_size=G * 3,
        num_generations=G,
        max_completion_length=8,
        beta=0.04,
        num_iterations=2,
        model_init_kwargs={"dtype": "float64"},
        temperature=0.9,
    )
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0, task_type="CAUSAL_LM")
    made = []
    for cls in (GRPOTrainer, CourseGRPOTrainer):
        torch.manual_seed(0)
        trainer = cls(
            model=str(tiny_model_dir),
            reward_funcs=lambda completions, **kw: [len(c[0]["content"]) % 5 * 1.0 for c in completions],
            args=args,
            train_dataset=dataset,
            peft_config=lora,
        )
        trainer.model.double()
        with torch.no_grad():
            for name, p in trainer.model.named_parameters():
                if "lora_B" in name:
                    p.copy_(
                        0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(len(name)), dtype=p.dtype)
                    )
        trainer.current_gradient_accumulation_steps = 1
        made.append(trainer)
    return made


def test_course_trainer_batch_and_loss_equal_trls(trainers):
    """One generated batch (the course trainer's own rollouts), scored by both trainers: the same old and
    reference log-probs, then the same loss and gradients."""
    plain, course = trainers
    rows = [{"prompt": [{"role": "user", "content": p}]} for p in PROMPTS for _ in range(G)]
    torch.manual_seed(5)
    batch = course._generate_and_score_completions(rows)
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    width = batch["completion_ids"].size(1)
    keep = batch["completion_mask"].bool()
    with torch.no_grad():
        old, _ = plain._get_per_token_logps_and_entropies(plain.model, ids, mask, width)
        with plain.model.disable_adapter():
            ref, _ = plain._get_per_token_logps_and_entropies(plain.model, ids, mask, width)
    torch.testing.assert_close(batch["old_per_token_logps"][keep], old[keep], rtol=0, atol=1e-10)
    torch.testing.assert_close(batch["ref_per_token_logps"][keep], ref[keep], rtol=0, atol=1e-10)
    assert (old[keep] - ref[keep]).abs().max() > 1e-2  # the LoRA matters: reference != policy
    inputs = dict(batch)
    inputs["old_per_token_logps"] = old + 0.3 * torch.randn(
        old.shape, generator=torch.Generator().manual_seed(1), dtype=old.dtype
    )  # clipping binds somewhere
    losses, grads = [], []
    for trainer in (plain, course):
        trainer.model.zero_grad()
        loss = trainer._compute_loss(trainer.model, inputs)
        loss.backward()
        losses.append(loss.item())
        grads.append(torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None]))
    assert losses[1] == pytest.approx(losses[0], rel=1e-9, abs=1e-12)
    assert grads[0].norm() > 0 and (grads[1] - grads[0]).norm() / grads[0].norm() < 1e-5
    for key in ("clip_ratio/region_mean", "kl", "entropy"):
        assert course._metrics["train"][key][-1] == pytest.approx(plain._metrics["train"][key][-1], rel=1e-6)


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "bnpo", "dapo"])
def test_course_trainer_skips_flat_groups_without_changing_the_loss(trainers, loss_type):
    """With beta = 0 a flat group (advantage 0 on every row) adds nothing: the course trainer leaves its rows
    out of the forward and backward passes, and the loss and gradients are still TRL's over the whole batch."""
    plain, course = trainers
    rows = [{"prompt": [{"role": "user", "content": p}]} for p in PROMPTS for _ in range(G)]
    torch.manual_seed(6)
    inputs = dict(course._generate_and_score_completions(rows))
    inputs["advantages"] = inputs["advantages"].clone()
    inputs["advantages"][G : 2 * G] = 0.0  # the second group is flat
    inputs["advantages"][:G] = torch.tensor([1.0, -0.5, -0.5])
    inputs["num_items_in_batch"] = inputs["completion_mask"].sum()
    seen = []
    original = course._get_per_token_logps_and_entropies

    def counted(model, input_ids, *args, **kwargs):
        seen.append(input_ids.size(0))
        return original(model, input_ids, *args, **kwargs)

    losses, grads = [], []
    before = [(trainer.beta, trainer.loss_type) for trainer in (plain, course)]
    for trainer in (plain, course):
        trainer.beta, trainer.loss_type = 0.0, loss_type
    course._get_per_token_logps_and_entropies = counted
    try:
        for trainer in (plain, course):
            trainer.model.zero_grad()
            loss = trainer._compute_loss(trainer.model, inputs)
            loss.backward()
            losses.append(loss.item())
            grads.append(torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None]))
        flat = dict(inputs, advantages=torch.zeros_like(inputs["advantages"]))
        course.model.zero_grad()
        course._compute_loss(course.model, flat).backward()
        flat_grads = [p.grad for p in course.model.parameters() if p.requires_grad]
    finally:
        del course._get_per_token_logps_and_entropies
        for trainer, (beta, kind) in zip((plain, course), before):
            trainer.beta, trainer.loss_type = beta, kind
    assert seen == [2 * G, 1]  # the flat group's rows were not run; an all-flat batch runs one row
    assert losses[0] != 0 and losses[1] == pytest.approx(losses[0], rel=1e-9, abs=1e-12)
    assert grads[0].norm() > 0 and (grads[1] - grads[0]).norm() / grads[0].norm() < 1e-5  # float32 RMSNorm
    assert all(g is None or g.abs().max() == 0 for g in flat_grads)


def test_course_trainer_samples_from_merged_weights(trainers):
    """The rollouts come from the merged copy, synced to the LoRA the optimizer moved."""
    _, course = trainers
    policy = course.accelerator.unwrap_model(course.model)
    called = []
    original = course._merged.model.forward
    course._merged.model.forward = lambda *a, **k: called.append(1) or original(*a, **k)
    try:
        with torch.no_grad():
            b = next(p for n, p in policy.named_parameters() if "lora_B" in n)
            b.add_(0.5)
        course._generate_and_score_completions([{"prompt": [{"role": "user", "content": "Hi"}]}] * (G * 3))
        ids = torch.tensor([[5, 6, 7]])
        with torch.no_grad():
            torch.testing.assert_close(course._merged.model(ids).logits, policy(ids).logits, rtol=0, atol=1e-10)
    finally:
        course._merged.model.forward = original
        with torch.no_grad():
            b.sub_(0.5)
    assert called
    assert "generate" not in vars(policy)  # the class's generate is back after the rollout


def test_length_buckets_cut_where_it_pays():
    assert fast_rollouts.length_buckets([40, 44, 128, 41]) == [[0, 3, 1], [2]]
    assert fast_rollouts.length_buckets([50, 52]) == [[0, 1]]
    assert fast_rollouts.length_buckets([7]) == [[0]]
    assert sorted(i for b in fast_rollouts.length_buckets([5, 90, 3, 60, 61, 2, 100, 4]) for i in b) == list(range(8))


def test_draw_samples_the_given_distribution():
    """draw() replaces torch.multinomial (12 % of a rollout): the same distribution, checked with a chi-square
    test on 40,000 draws of 5 outcomes, and an index of probability 0 is never drawn."""
    probs = torch.tensor([[0.5, 0.0, 0.2, 0.25, 0.05]] * 40_000)
    drawn = fast_rollouts.draw(probs, torch.Generator().manual_seed(0))
    counts = torch.bincount(drawn, minlength=5).double()
    assert counts[1] == 0
    expected = probs[0].double() * probs.size(0)
    keep = expected > 0
    chi2 = (((counts - expected)[keep] ** 2) / expected[keep]).sum().item()
    assert chi2 < 16.3  # chi-square, 3 degrees of freedom, p = 0.001
