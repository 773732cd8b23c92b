"""Camera streams to ``videos/<camera>.mp4`` through PyAV (H.264, yuv420p)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


class VideoStream:
    """One camera's MP4; frames arrive as (H, W, 3) uint8 at the control rate."""

    def __init__(self, path: Path, fps: float, width: int, height: int) -> None:
        import av

        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._container: Any = av.open(str(path), mode="w")
        # even sizes are required by yuv420p
        self._stream = self._container.add_stream("libx264", rate=int(round(fps)))
        self._stream.width, self._stream.height = width + width % 2, height + height % 2
        self._stream.pix_fmt = "yuv420p"
        self._stream.options = {"preset": "ultrafast", "crf": "23"}
        self.frames = 0

    def write(self, frame: np.ndarray) -> None:
        import av

        if frame.shape[1] % 2 or frame.shape[0] % 2:
            frame = np.pad(frame, ((0, frame.shape[0] % 2), (0, frame.shape[1] % 2), (0, 0)), mode="edge")
        for packet in self._stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")):
            self._container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        for packet in self._stream.encode():
            self._container.mux(packet)
        self._container.close()
