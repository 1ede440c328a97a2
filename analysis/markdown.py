"""Markdown and LaTeX tables from rows of cells: the one renderer every report section uses.

A leaf of ``analysis``: it imports nothing of the package, so any module (the collection, the
device table, the report's sections) renders a table without importing the report's makers.
"""

from __future__ import annotations

from dataclasses import dataclass

DASH = "—"


@dataclass
class Cell:
    text: str
    bold: bool = False


def _tex_escape(s: str) -> str:
    out = []
    for ch in s:
        if ch in "&%$#_{}":
            out.append("\\" + ch)
        elif ch == "~":
            out.append(r"\textasciitilde{}")
        elif ch == "^":
            out.append(r"\textasciicircum{}")
        elif ch == "\\":
            out.append(r"\textbackslash{}")
        else:
            out.append(ch)
    s = "".join(out)
    return (s.replace("±", r"$\pm$").replace(DASH, "--").replace("✓", r"\cmark").replace("✗", r"\xmark")
            .replace("×", r"$\times$"))


def render_markdown(header: list[str], rows: list[list[Cell | str]], align: str | None = None) -> str:
    """Pipe table; align: one of l/c/r per column (default: first l, rest r)."""
    align = align or "l" + "r" * (len(header) - 1)
    sep = {"l": ":---", "c": ":---:", "r": "---:"}
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep[a] for a in align) + " |"]
    for row in rows:
        cells = [c if isinstance(c, Cell) else Cell(str(c)) for c in row]
        lines.append("| " + " | ".join(f"**{c.text}**" if c.bold and c.text else c.text for c in cells) + " |")
    return "\n".join(lines) + "\n"


def render_latex(header: list[str], rows: list[list[Cell | str]], caption: str, label: str,
                 align: str | None = None) -> str:
    align = align or "l" + "r" * (len(header) - 1)
    out = [r"\begin{table}[h]", r"\centering", r"\begin{tabular}{" + align + "}", r"\toprule",
           " & ".join(r"\textbf{" + _tex_escape(h) + "}" for h in header) + r" \\", r"\midrule"]
    for row in rows:
        cells = [c if isinstance(c, Cell) else Cell(str(c)) for c in row]
        out.append(" & ".join(r"\textbf{" + _tex_escape(c.text) + "}" if c.bold and c.text else _tex_escape(c.text)
                              for c in cells) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}", r"\caption{" + _tex_escape(caption) + "}", r"\label{" + label + "}",
            r"\end{table}"]
    return "\n".join(out) + "\n"
