"""One HNSW index per vector size: a chunk's vector column is untyped (collections embed with
different models), and an index needs one size, so each is a partial index over the vectors cast
to that size — the shape ``apps.knowledge.search`` orders by."""

from django.db import migrations

SIZES = (384, 768, 1024, 1536)


def _index(size: int) -> migrations.RunSQL:
    name = f"knowledge_chunk_hnsw_{size}"
    return migrations.RunSQL(
        f"CREATE INDEX {name} ON knowledge_chunk USING hnsw "
        f"((embedding::vector({size})) vector_cosine_ops) WHERE dimensions = {size}",
        f"DROP INDEX IF EXISTS {name}",
    )


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0001_initial")]

    operations = [_index(size) for size in SIZES]
