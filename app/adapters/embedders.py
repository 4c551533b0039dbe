"""Embedders: text to unit vectors for search by meaning. The local model runs on the CPU in a
thread (never on the event loop); nothing here downloads anything or knows about tenants."""

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]  # (n, dim), each row of unit length
# What a stored vector is: float16 halves the bytes per entry, and cosine similarity of
# unit vectors loses nothing a ranking can see at that precision.
STORED_DTYPE = np.float16
MAX_TEXT_CHARS = 4000  # an entry's title, tags and summary beyond this add little meaning


class Embedder(Protocol):
    """`model` names the vectors it makes (stored with each one: a changed model re-embeds)."""

    model: str

    async def embed(self, texts: Sequence[str]) -> Vectors: ...


class LocalEmbedder:
    """WordLlama (l2_supercat, 256 dimensions, MIT): a static token-embedding model whose
    wheel ships its weights, so it loads from the installed package with no download."""

    model = "local:wordllama-l2-supercat-256"

    def __init__(self, inference: Any) -> None:
        self._inference = inference

    def embed_now(self, texts: Sequence[str]) -> Vectors:
        """On the calling thread: for a thread of its own, or a benchmark."""
        clipped = [t[:MAX_TEXT_CHARS] for t in texts]
        out: Vectors = self._inference.embed(clipped, norm=True).astype(np.float32, copy=False)
        return out

    async def embed(self, texts: Sequence[str]) -> Vectors:
        return await asyncio.to_thread(self.embed_now, texts)


# How to install the local model where it is missing (`make` and the Dockerfile run it).
INSTALL_HINT = "pip install --require-hashes --no-deps -r requirements/embedder.txt"


def load_local() -> LocalEmbedder | None:
    """The local model from the installed wordllama wheel; None (logged) when it is not
    installed: it is optional, imported only here (docs/search.md, "The local model")."""
    try:
        import wordllama  # type: ignore[import-untyped]
        from safetensors import safe_open
        from tokenizers import Tokenizer
        from wordllama.inference import WordLlamaInference  # type: ignore[import-untyped]
    except ImportError as exc:
        log.warning(
            "the local embedder is not installed (%s): tenants on the local model search by "
            "keywords only; install it with `%s` from the source tree (docs/search.md)",
            exc,
            INSTALL_HINT,
        )
        return None
    # Loaded from the wheel's own files: WordLlama.load() looks for the tokenizer in a
    # directory the wheel does not have and then downloads it.
    root = Path(wordllama.__file__).parent
    with safe_open(str(root / "weights" / "l2_supercat_256.safetensors"), "np") as f:
        weights = f.get_tensor("embedding.weight")
    tokenizer = Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    return LocalEmbedder(WordLlamaInference(weights, tokenizer))


class QueryVectors:
    """The last `size` questions' vectors per model, so a repeated question (the search page
    cache's misses after a write, the context loader) is not embedded again."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._vectors: OrderedDict[tuple[str, str], npt.NDArray[np.float32]] = OrderedDict()

    def held(self, embedder: Embedder, text: str) -> npt.NDArray[np.float32] | None:
        """The question's vector if kept, without embedding it."""
        return self._vectors.get((embedder.model, text))

    async def vector(self, embedder: Embedder, text: str) -> npt.NDArray[np.float32]:
        key = (embedder.model, text)
        found = self._vectors.get(key)
        if found is not None:
            self._vectors.move_to_end(key)
            return found
        vector: npt.NDArray[np.float32] = (await embedder.embed([text]))[0]
        self._vectors[key] = vector
        while len(self._vectors) > self.size:
            self._vectors.popitem(last=False)
        return vector


def to_blob(vector: npt.NDArray[np.float32]) -> bytes:
    return vector.astype(STORED_DTYPE).tobytes()


def from_blobs(blobs: Sequence[bytes]) -> Vectors:
    """Stored vectors (all of one model: one length) as one float32 matrix (n, dim)."""
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    joined = np.frombuffer(b"".join(blobs), dtype=STORED_DTYPE)
    out: Vectors = joined.reshape(len(blobs), -1).astype(np.float32)
    return out
