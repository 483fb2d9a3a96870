"""Histories recorded before the collector recorded Flink's buffers in (``numBuffersInLocal/RemotePerSecond``): their
parts lack the two columns, and they profile as they did before — the shipped example is one."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
from profile_support import EXAMPLE, INVENTORY

from placement.collect.layout import OPTIONAL_COLUMNS, SAMPLE_SCHEMA, read_samples
from placement.profile.history import select_runs
from placement.profile.pipeline import build_profile

# The pandas profile of the shipped example with the lab inventory, as main computed it before these columns existed
# (a31ea13).
DIGEST_BEFORE = "sha256:3352333845e8453b273cc667fb10cdfa9ae65a5655201a065f0598ac9f809584"


def test_a_history_without_the_buffer_columns_profiles_as_before(tmp_path):
    selection = select_runs(EXAMPLE)  # the check lets a part without them through
    assert selection.parts and all(OPTIONAL_COLUMNS.isdisjoint(pq.read_schema(p).names) for p in selection.parts)
    read = read_samples(selection.run_dirs[0], selection.vertex_ids, ["subtask", *sorted(OPTIONAL_COLUMNS)])
    assert read.num_rows > 0 and all(read[c].null_count == read.num_rows for c in OPTIONAL_COLUMNS)
    old = build_profile(EXAMPLE, engine="pandas", inventory=INVENTORY)
    assert all(s.buffers_in_per_s is None for v in old.vertices for s in v.subtasks)
    assert not any("buffers_in_per_s" in s for v in old.dump()["vertices"] for s in v["subtasks"])
    assert old.digest() == DIGEST_BEFORE
    # and it reads as a history whose parts have the columns, all null (a job that reported neither)
    nulls = tmp_path / "nulls"
    shutil.copytree(EXAMPLE, nulls)
    for part in nulls.glob("job_id=*/run_id=*/part-*.parquet"):
        t = pq.read_table(part)
        for c in sorted(OPTIONAL_COLUMNS):
            t = t.append_column(SAMPLE_SCHEMA.field(c), pa.nulls(t.num_rows, pa.float64()))
        pq.write_table(t, part)
    assert build_profile(nulls, engine="pandas", inventory=INVENTORY).dump() == old.dump()
