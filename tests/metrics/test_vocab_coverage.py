"""Vocabulary pruning coverage (Appendix J): hand-computed coverage, top-k, correlations, and the drafter
vocabulary files (EAGLE-3 d2t / t2d written with safetensors, JSON id lists, token-count files)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from speedbench.metrics.vocab_coverage import (
    VocabInputError,
    group_coverage,
    in_vocab,
    pearson,
    spearman,
    token_counts,
    top_k_vocab,
    vocab_from_d2t,
    vocab_from_ids,
    vocab_from_t2d,
)
from speedbench.tokenization.draft_vocab import read_draft_vocab, read_token_counts

# The drafter keeps target ids 2, 5, 7, 9 of a 12-id target vocabulary: draft id d -> d + d2t[d].
KEPT = [2, 5, 7, 9]
D2T = np.array([2 - 0, 5 - 1, 7 - 2, 9 - 3], dtype=np.int64)
T2D = np.zeros(12, dtype=bool)
T2D[KEPT] = True


def test_d2t_and_t2d_give_the_kept_target_ids():
    assert vocab_from_d2t(D2T).tolist() == KEPT
    assert vocab_from_t2d(T2D).tolist() == KEPT
    assert vocab_from_ids([9, 2, 2, 7, 5]).tolist() == KEPT
    assert vocab_from_d2t(D2T.astype(np.int32)).tolist() == KEPT  # any integer dtype


def test_coverage_by_group_computed_by_hand():
    # request A (x): 2, 5 inside, 1 out -> 2/3; B (x): 7, 7 inside, 3 and 11 out -> 2/4; C (y): 9 -> 1/1
    requests = [("x", [2, 5, 1]), ("x", [7, 7, 3, 11]), ("y", [9])]
    flat = np.concatenate([np.asarray(ids) for _, ids in requests])
    inside = in_vocab(flat, np.array(KEPT))
    assert inside.tolist() == [True, True, False, True, True, False, False, True]
    figures = group_coverage([g for g, _ in requests], [len(ids) for _, ids in requests], inside)
    assert figures.tokens == {"x": 7, "y": 1}
    assert figures.inside == {"x": 4, "y": 1}
    assert figures.share == {"x": pytest.approx(4 / 7), "y": 1.0}  # token-weighted, not (2/3 + 2/4) / 2
    overall = group_coverage(["all"] * 3, [3, 4, 1], inside)
    assert overall.share["all"] == pytest.approx(5 / 8)
    empty = group_coverage(["z"], [0], np.zeros(0, bool))
    assert empty.share == {"z": None}
    with pytest.raises(VocabInputError, match="sum to 7 tokens, not 8"):
        group_coverage(["x", "y"], [3, 4], inside)


def test_in_vocab_beyond_the_largest_kept_id():
    assert in_vocab(np.array([0, 2, 9, 10, 10_000]), np.array(KEPT)).tolist() == [False, True, True, False, False]
    assert in_vocab(np.array([1]), np.zeros(0, np.int64)).tolist() == [False]


def test_top_k_by_hand_ties_to_the_smaller_id():
    counts = np.array([0, 3, 5, 3, 1, 0, 5])  # ids 2 and 6 most frequent, then 1 and 3 tied, then 4
    assert top_k_vocab(counts, 2).tolist() == [2, 6]
    assert top_k_vocab(counts, 3).tolist() == [1, 2, 6]  # 1 beats 3 on the tie
    assert top_k_vocab(counts, 4).tolist() == [1, 2, 3, 6]
    assert top_k_vocab(counts, 100).tolist() == [1, 2, 3, 4, 6]  # never an id the corpus never used
    assert token_counts(np.array([2, 2, 6, 1])).tolist() == [0, 1, 2, 0, 0, 0, 1]
    with pytest.raises(VocabInputError, match="k must be positive"):
        top_k_vocab(counts, 0)


def test_pearson_and_spearman_by_hand_and_against_scipy():
    from scipy import stats

    # x = 1, 2, 3; y = 1, 2, 4: cov = 3, var x = 2, var y = 42/9 -> r = 9 / sqrt(84)
    assert pearson([1, 2, 3], [1, 2, 4]) == pytest.approx(9 / np.sqrt(84))
    assert spearman([1, 2, 3], [1, 2, 4]) == pytest.approx(1.0)
    assert spearman([3, 2, 1], [1, 2, 4]) == pytest.approx(-1.0)
    rng = np.random.default_rng(16)
    for _ in range(20):
        x, y = rng.integers(0, 5, 9).astype(float), rng.normal(size=9)  # ties in x
        if np.ptp(x) == 0:
            continue
        assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic)
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)
    assert pearson([1, 2], [3, 4]) is None  # fewer than three groups
    assert pearson([1, 1, 1], [1, 2, 3]) is None  # constant coverage
    with pytest.raises(VocabInputError, match="3 x values but 2 y values"):
        pearson([1, 2, 3], [1, 2])


@pytest.mark.parametrize("values, fragment", [
    (np.array([0.0, 1.0]), "must hold integers, got dtype float64"),
    (np.array([[0, 1]]), "must be a 1-D array, got shape (1, 2)"),
    (np.array([True, False]), "must hold integers, got dtype bool"),
    (np.array([1, 0]), "map to a target id another draft id already maps to"),  # 0+1 == 1+0
    (np.array([0, -5]), "id -4 at index 1 is negative"),
])
def test_bad_d2t(values, fragment):
    with pytest.raises(VocabInputError) as caught:
        vocab_from_d2t(values, "drafter.safetensors: tensor 'd2t'")
    assert fragment in str(caught.value) and "drafter.safetensors: tensor 'd2t'" in str(caught.value)


def test_bad_t2d_and_ids_out_of_range():
    with pytest.raises(VocabInputError, match="must be a bool mask, got dtype int64"):
        vocab_from_t2d(np.array([0, 1, 1]))
    with pytest.raises(VocabInputError, match="1-D mask"):
        vocab_from_t2d(np.ones((2, 2), dtype=bool))
    with pytest.raises(VocabInputError, match="id 12 at index 3 is outside the target vocabulary of 12 ids"):
        vocab_from_d2t(np.array([2, 4, 5, 9]), target_vocab_size=12)
    with pytest.raises(VocabInputError, match="ids: id 40 at index 1 is outside"):
        vocab_from_ids([1, 40], target_vocab_size=12)


# --- the files ---------------------------------------------------------------------------------------

def test_safetensors_d2t_t2d_and_which_wins(tmp_path):
    save_file({"d2t": D2T}, str(tmp_path / "d2t.safetensors"))
    save_file({"t2d": T2D}, str(tmp_path / "t2d.safetensors"))
    # a checkpoint: weights and a prefixed mapping; only the two tensors are read
    save_file({"model.d2t": D2T, "lm_head.weight": np.zeros((4, 3), np.float32)}, str(tmp_path / "ckpt.safetensors"))
    for name, source in (("d2t", "d2t"), ("t2d", "t2d"), ("ckpt", "d2t")):
        vocab = read_draft_vocab(tmp_path / f"{name}.safetensors")
        assert (vocab.ids.tolist(), vocab.source, vocab.notes) == (KEPT, source, [])
    assert read_draft_vocab(tmp_path / "t2d.safetensors").target_vocab_size == 12

    other = T2D.copy()
    other[[9, 10, 11]] = [False, True, True]  # t2d keeps 2, 5, 7, 10, 11
    save_file({"d2t": D2T, "t2d": other}, str(tmp_path / "both.safetensors"))
    both = read_draft_vocab(tmp_path / "both.safetensors")
    assert both.source == "d2t" and both.ids.tolist() == KEPT  # d2t wins
    assert both.notes == ["t2d and d2t disagree (2 ids only in t2d, 1 only in d2t); d2t used (what the engine "
                          "applies at inference)"]
    assert both.target_vocab_size == 12


def test_safetensors_errors_name_the_file_and_tensor(tmp_path):
    path = tmp_path / "vocab.safetensors"
    with pytest.raises(VocabInputError, match=f"{path}: no such file"):
        read_draft_vocab(path)
    path.write_bytes(b"not a safetensors file at all")
    with pytest.raises(VocabInputError, match=f"{path}: not a readable safetensors file"):
        read_draft_vocab(path)
    save_file({"lm_head.weight": np.zeros(3, np.float32)}, str(path))
    with pytest.raises(VocabInputError, match=r"holds neither a 'd2t' nor a 't2d' tensor \(tensors: lm_head.weight\)"):
        read_draft_vocab(path)
    save_file({"d2t": D2T.astype(np.float32)}, str(path))
    with pytest.raises(VocabInputError, match=f"{path}: tensor 'd2t': must hold integers, got dtype float32"):
        read_draft_vocab(path)
    save_file({"t2d": T2D.astype(np.uint8)}, str(path))
    with pytest.raises(VocabInputError, match=f"{path}: tensor 't2d': must be a bool mask, got dtype uint8"):
        read_draft_vocab(path)
    save_file({"d2t": D2T.reshape(2, 2)}, str(path))
    with pytest.raises(VocabInputError, match=r"tensor 'd2t': must be a 1-D array, got shape \(2, 2\)"):
        read_draft_vocab(path)
    save_file({"d2t": D2T, "t2d": T2D}, str(path))
    with pytest.raises(VocabInputError, match="covers 12 target ids but the target vocabulary has 11"):
        read_draft_vocab(path, target_vocab_size=11)
    save_file({"d2t": D2T}, str(path))
    with pytest.raises(VocabInputError, match=r"tensor 'd2t' \(target id d \+ d2t\[d\]\): id 9 at index 3 is outside"):
        read_draft_vocab(path, target_vocab_size=9)
    save_file({"a.d2t": D2T, "b.d2t": D2T}, str(path))
    with pytest.raises(VocabInputError, match=r"several tensors end in '.d2t' \(a.d2t, b.d2t\)"):
        read_draft_vocab(path)


def test_json_id_lists(tmp_path):
    path = tmp_path / "vocab.json"
    path.write_text(json.dumps([9, 2, 7, 5, 5]))
    vocab = read_draft_vocab(path)
    assert (vocab.ids.tolist(), vocab.source, vocab.notes) == (KEPT, "json", ["1 duplicate ids dropped"])
    path.write_text(json.dumps({"ids": KEPT}))
    assert read_draft_vocab(path).ids.tolist() == KEPT
    for bad, fragment in (([1, True], "item 1 is True, not an integer"), ([1, 2.0], "item 1 is 2.0"),
                          ([1, -3], "id -3 at index 1 is negative"), ({"a": 1}, "must hold a JSON list"),
                          ([1, 2**40], f"target id {2**40} is not a token id")):
        path.write_text(json.dumps(bad))
        with pytest.raises(VocabInputError, match=str(path)) as caught:
            read_draft_vocab(path)
        assert fragment in str(caught.value)
    path.write_text("[1, 2")
    with pytest.raises(VocabInputError, match="not valid JSON"):
        read_draft_vocab(path)


def test_token_count_files(tmp_path):
    as_json = tmp_path / "counts.json"
    as_json.write_text(json.dumps({"6": 5, "2": 5, "1": 3}))
    assert read_token_counts(as_json).tolist() == [0, 3, 5, 0, 0, 0, 5]
    as_text = tmp_path / "counts.tsv"
    as_text.write_text("# id count\n6 5\n\n2\t4\n2 1\n1 3\n")  # id 2 listed twice: adds up
    assert read_token_counts(as_text).tolist() == [0, 3, 5, 0, 0, 0, 5]
    for text, fragment in (("6 5\n7 x\n", ":2: expected '<token id> <count>'"), ("6 5 1\n", ":1: expected"),
                           ("-1 4\n", ":1: expected"), ("# nothing\n", "no token counts"),
                           ("99999999999 1\n", "token id 99999999999 is not a token id")):
        as_text.write_text(text)
        with pytest.raises(VocabInputError, match=str(as_text)) as caught:
            read_token_counts(as_text)
        assert fragment in str(caught.value)
    as_text.write_text(f"4 {2**53 + 1}\n4 1\n")  # exact integers (float64 weights lose the +1s)
    assert read_token_counts(as_text).tolist() == [0, 0, 0, 0, 2**53 + 2]
    as_text.write_text(f"4 {2**53 + 1}\n")
    assert read_token_counts(as_text)[4] == 2**53 + 1  # float64 would round it to 2^53
    as_text.write_text(f"3 {2**62}\n3 1\n")
    with pytest.raises(VocabInputError, match=rf"{as_text}: token id 3: count {2**62 + 1} is above {2**62}"):
        read_token_counts(as_text)
    for doc, fragment in (({"x": 1}, "entry 'x'"), ({"1": -1}, "entry '1': -1"), ([1], "JSON object"),
                          ({"1": 2**70}, f"count {2**70} is above")):
        as_json.write_text(json.dumps(doc))
        with pytest.raises(VocabInputError, match=str(as_json)) as caught:
            read_token_counts(as_json)
        assert fragment in str(caught.value)
    with pytest.raises(VocabInputError, match="no such file"):
        read_token_counts(tmp_path / "missing.json")
