"""Store: the catalog (JSON), chunk texts/vectors/metadata (Chroma), the int8 token cache (numpy)."""
from .catalog import Catalog
from .chunk_store import ChunkStore
from .token_cache import TokenCache

__all__ = ["Catalog", "ChunkStore", "TokenCache"]
