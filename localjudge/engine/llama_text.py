"""Text <-> tokens for a loaded GGUF model: its vocabulary, metadata, chat template, and prompt tokenization.

`LlamaText` is a part of `LlamaEngine` (engine/llama.py), which loads the model and sets the attributes it
reads. Control tokens in a prompt come only from the chat template's own markup: a message that spells one
gets it as plain text (`_tokenize_prompt`).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from ..constraints.base import TokenVocab
from ..errors import ChatTemplateError, InputError
from ..models.registry import ModelInfo
from .base import Message
from .template import ChatTemplate


class LlamaText:
    """The model's vocabulary, metadata and chat template, and tokenization of text and prompts."""

    _L: Any  # the llama_cpp module
    _model: Any  # llama_model pointer
    _vocab_p: Any  # llama_vocab pointer
    _template_mode: str
    _template: Any
    info: ModelInfo
    n_vocab: int

    def _read_vocab(self) -> TokenVocab:
        return read_vocab(self._L, self._vocab_p, self.n_vocab)

    def _meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(1 << 16)
        n = self._L.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        if n < 0:
            return None
        if n >= len(buf):
            buf = ctypes.create_string_buffer(n + 1)
            self._L.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def _pick_template(self, chat_template: str | None, timeout_s: float, memory_mb: int) -> tuple[str, Any]:
        mode = chat_template or self.info.chat_template or "gguf"
        if mode == "raw":
            return "raw", None
        src = self._meta("tokenizer.chat_template") if mode == "gguf" else mode
        if not src:
            raise ChatTemplateError(
                f"model {self.info.name!r} has no chat template in its GGUF metadata (a base model?); pass "
                "--chat-template raw to send prompts as plain text, or --chat-template '<jinja template>'"
            )
        # compiled and rendered in a child process under time and memory limits (engine/template.py)
        return "jinja", ChatTemplate(src, self.info.name, time_limit_s=timeout_s, memory_mb=memory_mb)

    # ------------------------------------------------------------------ text ↔ tokens

    def tokenize(self, text: str | bytes, add_special: bool = False, parse_special: bool = False) -> list[int]:
        """Text → the model's token ids (special tokens parsed only with `parse_special`)."""
        data = text.encode("utf-8") if isinstance(text, str) else text
        n_max = len(data) + 16
        arr = (self._L.llama_token * n_max)()
        n = self._L.llama_tokenize(self._vocab_p, data, len(data), arr, n_max, add_special, parse_special)
        if n < 0:
            arr = (self._L.llama_token * (-n))()
            n = self._L.llama_tokenize(self._vocab_p, data, len(data), arr, -n, add_special, parse_special)
        return list(arr[:n])

    def render_prompt(self, messages: Sequence[Message]) -> str:
        """The chat template applied to the messages, with the generation prompt (raw: plain text blocks)."""
        msgs = [{"role": m.role, "content": m.content} for m in messages]
        if self._template_mode == "raw":
            return "\n\n".join(m["content"] for m in msgs) + "\n\n"
        return self._template.render(
            messages=msgs, add_generation_prompt=True, bos_token=self._special_text("bos"), eos_token=self._special_text("eos")
        )

    def _special_text(self, which: str) -> str:
        tok = self._L.llama_vocab_bos(self._vocab_p) if which == "bos" else self._L.llama_vocab_eos(self._vocab_p)
        if tok < 0:
            return ""
        buf = ctypes.create_string_buffer(256)
        k = self._L.llama_token_to_piece(self._vocab_p, tok, buf, 256, 0, True)
        return buf.raw[: max(k, 0)].decode("utf-8", "replace")

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """The prompt's token ids: BOS where the model wants one, control tokens only from the template."""
        text = self.render_prompt(messages)
        bos = self._special_text("bos")
        add_bos = bool(self._L.llama_vocab_get_add_bos(self._vocab_p)) and not (bos and text.startswith(bos))
        toks = self._tokenize_prompt(text, messages)
        bos_id = self._L.llama_vocab_bos(self._vocab_p)
        return ([bos_id] if add_bos and bos_id >= 0 else []) + toks

    def _tokenize_prompt(self, text: str, messages: Sequence[Message]) -> list[int]:
        """Control tokens (<|im_end|>, <end_of_turn>) come only from the template's own markup: a message
        that spells one (a judged text) gets it as plain text, so it cannot end its turn or forge one.
        Prompts whose messages spell none are tokenized as one string, as before."""
        spelled = [self.tokenize(m.content, parse_special=True) != self.tokenize(m.content) for m in messages]
        if not any(spelled):
            return self.tokenize(text, parse_special=True)
        marks = [f"\ue000{i}\ue001" if sp else m.content for i, (m, sp) in enumerate(zip(messages, spelled, strict=True))]
        masked = self.render_prompt([Message(role=m.role, content=k) for m, k in zip(messages, marks, strict=True)])
        out: list[int] = []
        rebuilt, rest = "", masked  # private-use sentinels mark where each spelling message's text goes
        for i, m in enumerate(messages):
            if spelled[i]:
                head, found, rest = rest.partition(marks[i])
                if not found or marks[i] in rest:
                    break
                out += self.tokenize(head, parse_special=True) + self.tokenize(m.content)
                rebuilt += head + m.content
        if rebuilt + rest != text:
            raise InputError(
                "a message spells the model's control tokens (such as <|im_end|>) and the chat template "
                "alters message text, so it cannot be kept as plain text; remove them from the input"
            )
        return out + self.tokenize(rest, parse_special=True)

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Prompt tokens these messages take with the model's chat template."""
        return len(self.prompt_tokens(messages))


def read_vocab(L: Any, vocab_p: Any, n_vocab: int) -> TokenVocab:
    """The token pieces and end-of-generation ids of a loaded llama.cpp vocabulary (`L`: the llama_cpp module;
    control tokens are empty pieces; the main EOS first)."""
    buf = ctypes.create_string_buffer(512)
    pieces: list[bytes] = []
    eos: list[int] = []
    for i in range(n_vocab):
        if L.llama_vocab_is_eog(vocab_p, i):
            eos.append(i)
        if L.llama_vocab_is_control(vocab_p, i):
            pieces.append(b"")
            continue
        k = L.llama_token_to_piece(vocab_p, i, buf, 512, 0, False)
        pieces.append(buf.raw[:k] if k > 0 else b"")
    main_eos = int(L.llama_vocab_eos(vocab_p))
    eos = sorted(set(eos) | ({main_eos} if main_eos >= 0 else set()), key=lambda t: (t != main_eos, t))
    return TokenVocab(pieces=pieces, eos_ids=eos)
