"""Store: the catalog (JSON), chunk texts/vectors/metadata (Chroma), the int8 token cache (numpy), and the
Library: what readers see of them."""
from .catalog import Catalog
from .chunk_store import ChunkStore
from .library import Library
from .token_cache import TokenCache

__all__ = ["Catalog", "ChunkStore", "Library", "TokenCache"]
