"""Labels beside crowded markers: each put at the first free place around its point (notebook
03's frontier figure, whose settings cluster)."""

from __future__ import annotations

# Where a label may sit around its point, nearest first: (dx, dy) in points, and its alignment.
LABEL_OFFSETS = [
    (4, 2, "left", "bottom"),
    (4, -2, "left", "top"),
    (-4, 2, "right", "bottom"),
    (-4, -2, "right", "top"),
    (0, 6, "center", "bottom"),
    (0, -6, "center", "top"),
    (9, 0, "left", "center"),
    (-9, 0, "right", "center"),
    (16, -14, "left", "top"),  # farther out, with a leader line
    (-16, -14, "right", "top"),
    (16, 14, "left", "bottom"),
    (-16, 14, "right", "bottom"),
    (0, -24, "center", "top"),
    (28, -24, "left", "top"),
]
LEADER_FROM = 10  # points: a label farther from its point than this gets a line to it


def place_labels(ax, labels, points, avoid=(), clearance: float = 3.0) -> list:
    """Annotate `labels` ((x, y, text, colour) in data coordinates, most important first) next to
    their points, each at the first offset of LABEL_OFFSETS whose box stays inside the axes and
    overlaps no label placed before it, no box of `avoid` (display space, e.g. a legend), its own
    marker and no other marker of `points` ((x, y, radius in points)) widened by `clearance` points,
    so that a label sits nearer its own point than any other; a label with no free place is left
    out. Returns the annotations placed. Call it once the axes' limits and the figure's layout are
    final (fig.canvas.draw()): it measures in display space."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    renderer = ax.figure.canvas.get_renderer()
    px_per_pt = ax.figure.dpi / 72

    def square(x, y, radius):  # a marker's box in display space
        cx, cy = ax.transData.transform((x, y))
        r = radius * px_per_pt
        return Bbox.from_extents(cx - r, cy - r, cx + r, cy + r)

    frame, taken, placed = ax.get_window_extent(renderer), list(avoid), []
    for x, y, text, color in labels:
        markers = [square(px, py, r if (px, py) == (x, y) else r + clearance) for px, py, r in points]
        for dx, dy, ha, va in LABEL_OFFSETS:
            far = dict(arrowprops=dict(arrowstyle="-", lw=0.5, color=color)) if abs(dx) + abs(dy) > LEADER_FROM else {}
            note = ax.annotate(
                text, (x, y), (dx, dy), textcoords="offset points", fontsize=7, color=color, ha=ha, va=va, **far
            )
            note.update_positions(renderer)
            box = Text.get_window_extent(note, renderer)  # the text alone, not its leader line
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(b) for b in taken + markers):
                taken.append(box)
                placed.append(note)
                break
            note.remove()
    return placed
