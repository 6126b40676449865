"""A byte-level BPE tokenizer with a ChatML template, trained here (no download), beside stories260K's
SentencePiece-style one: the two tokenizer families whose later-turn prompts must be exact."""
from __future__ import annotations

import json

import pytest

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
CORPUS = ["Once upon a time there was a little cat. It liked to play in the sun.",
          "What happened next? The dog ran to the park, and they were happy!",
          "Sure thing. Here is a story about a bird that sang every morning.",
          "Numbers like 12, 345 and 6789 appear too; so do quotes: 'yes' and \"no\".",
          "A list:\n\n- one\n- two\n\n\nThe end.\n\n"] * 20  # blank lines: '\n' runs become one token


@pytest.fixture(scope="session")
def bytelevel_folder(tmp_path_factory):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    folder = tmp_path_factory.mktemp("bytelevel")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(CORPUS, trainer)
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"eos_token": "<|im_end|>", "bos_token": None, "chat_template": CHATML}))
    return folder
