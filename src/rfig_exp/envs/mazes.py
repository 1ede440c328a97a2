"""PointMaze layouts and their validation.

Rows are listed top to bottom, ``1`` is a wall cell and ``0`` a free cell; every layout is
walled on its border. The five named layouts are those of D4RL / Gymnasium-Robotics
(``maps.py``: U_MAZE, OPEN, MEDIUM_MAZE, LARGE_MAZE) and D4RL's giant maze, which pointax
also ships (facts in ``docs/pointmaze.md``). Geometry, as in Gymnasium-Robotics with
``maze_size_scaling = 1``: a layout of ``H`` rows and ``W`` columns spans
``x in [-W/2, W/2]``, ``y in [-H/2, H/2]``, and cell ``(i, j)`` has its centre at
``x = (j + 0.5) - W/2``, ``y = H/2 - (i + 0.5)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rfig_exp.config.errors import ConfigError

# conf/env/pointmaze_custom.yaml's layout, an example to edit: two rooms joined by a door in the middle wall
CUSTOM_EXAMPLE = ("111111111", "100010001", "100000001", "100010001", "111111111")

MAZES: dict[str, tuple[str, ...]] = {
    "umaze": ("11111", "10001", "11101", "10001", "11111"),
    "open": ("1111111", "1000001", "1000001", "1000001", "1111111"),
    "medium": ("11111111", "10011001", "10010001", "11000111", "10010001", "10100101", "10001001",
               "11111111"),
    "large": ("111111111111", "100001000001", "101101010101", "100000010001", "101111011101",
              "100101000001", "110101010111", "100100010001", "111111111111"),
    "giant": ("1111111111111111", "1010000001100001", "1010110101001101", "1000100100010001",
              "1011101111110101", "1000100010000101", "1110101001010111", "1000100100010001",
              "1010101111110101", "1011100010001101", "1000001000100001", "1111111111111111"),
}


def parse_layout(layout: Any, key: str = "env.layout") -> np.ndarray:
    """A layout given as rows of ``"0"``/``"1"`` strings or of 0/1 values -> ``[H, W]`` bool
    (True = wall). Raises :class:`ConfigError` naming ``key`` unless the layout is
    rectangular, walled on its whole border and has at least two free cells (a goal cell
    and a different start cell must exist for the ``mujoco`` reset rule)."""
    # OmegaConf's ListConfig is iterable but not a Sequence: accept any non-string iterable.
    if isinstance(layout, (str, bytes, dict)) or not hasattr(layout, "__iter__"):
        layout = None
    layout = list(layout) if layout is not None else []
    if not layout:
        raise ConfigError(f"{key} must be a non-empty list of rows (strings like '10001' or lists of 0/1), "
                          "top row first")
    rows = []
    for i, row in enumerate(layout):
        if isinstance(row, (str, int)) and not isinstance(row, bool):  # Hydra reads 10001 as an int
            cells = list(str(row))
        elif hasattr(row, "__iter__") and not isinstance(row, dict):
            cells = list(row)
        else:
            cells = []
        if not cells:
            raise ConfigError(f"{key}: row {i} ({row!r}) must be a non-empty string or list of 0/1")
        values = []
        for c in cells:
            if isinstance(c, bool) or str(c).strip() not in ("0", "1"):
                raise ConfigError(f"{key}: row {i} ({row!r}) has {c!r}; cells must be 0 (free) or 1 (wall)")
            values.append(str(c).strip() == "1")
        rows.append(values)
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise ConfigError(f"{key} is not rectangular: row lengths {[len(r) for r in rows]}")
    walls = np.array(rows, dtype=bool)
    if walls.shape[0] < 3 or walls.shape[1] < 3:
        raise ConfigError(f"{key} is {walls.shape[0]} x {walls.shape[1]}; a walled maze needs at least 3 x 3")
    border = np.concatenate([walls[0], walls[-1], walls[:, 0], walls[:, -1]])
    if not border.all():
        raise ConfigError(f"{key} must be walled: every cell of the first and last row and column must be 1")
    if (~walls).sum() < 2:
        raise ConfigError(f"{key} has {(~walls).sum()} free cell(s); at least two are needed (goal and start)")
    return walls


def cell_centres(walls: np.ndarray) -> np.ndarray:
    """Centres ``[n_free, 2]`` (x, y) of the free cells, row-major order (as Gymnasium-Robotics
    lists its goal and reset locations)."""
    h, w = walls.shape
    i, j = np.nonzero(~walls)
    return np.stack([(j + 0.5) - w / 2, h / 2 - (i + 0.5)], axis=-1).astype(np.float64)
