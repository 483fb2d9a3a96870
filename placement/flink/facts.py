"""Facts about Flink itself that the profile rules and the cost model both read (pure constants, no I/O).

They sit with the rest of what the tool knows about Flink so that :mod:`placement.profile` and
:mod:`placement.costmodel` import them from below instead of one importing the other."""

from __future__ import annotations

DEFAULT_BUFFER_TIMEOUT_MS = 100.0  # Flink's execution.buffer-timeout.interval when a job does not set it
METER_SPAN_S = 60.0  # Flink's MeterView default time span: a …PerSecond rate is the last minute's
SEGMENT_BYTES = 32 * 1024  # taskmanager.memory.segment-size: a full buffer is sent whatever the timeout
# Flink 2.3 netty framing of a BufferResponse: 9 bytes frame header (length, magic, id) + 38 bytes message header
# (receiver id 16, subpartition 4, sequence number 4, backlog 4, data type 1, compressed 1, size 4, partial buffers 4).
MESSAGE_HEADER_BYTES = 47
