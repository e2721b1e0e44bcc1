"""Documents written by the tests themselves: a PDF with real text per page (pypdf writes the
page content stream), a DOCX (python-docx), and a labelled set of short documents on distinct
topics with questions whose answer is in one known file."""

from __future__ import annotations

from pathlib import Path

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

__all__ = ["CORPUS", "QUESTIONS", "write_corpus", "write_docx", "write_pdf"]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_pdf(path: Path, pages: list[str]) -> Path:
    """A PDF whose page N shows ``pages[N-1]``, one line of text per line of the string."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    for text in pages:
        page = writer.add_blank_page(612, 792)
        lines = "".join(f"({_escape(line)}) Tj T* " for line in text.split("\n"))
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 11 Tf 14 TL 72 740 Td {lines}ET".encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def write_docx(path: Path, paragraphs: list[str]) -> Path:
    import docx

    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    document.save(str(path))
    return path


CORPUS: dict[str, str] = {
    "volcanoes.md": "# Volcanoes\nMagma rises through the crust and erupts as lava. "
    "Stratovolcanoes such as Mount Fuji build steep cones from layers of ash and lava."
    "\nPyroclastic flows are the deadliest hazard of an eruption.",
    "sourdough.txt": "Sourdough bread rises thanks to a starter: a culture of wild yeast and "
    "lactic acid bacteria. Feed the starter flour and water daily.\nA long cold proof in the "
    "fridge gives the loaf its sour flavour and open crumb.",
    "chess.html": "<html><head><style>p{color:red}</style><script>var x=1;</script></head><body>"
    "<h1>Chess openings</h1><p>The Sicilian Defence answers 1.e4 with c5. The Queen's Gambit "
    "offers a pawn to control the centre.</p><p>Castling moves the king two squares toward a "
    "rook.</p></body></html>",
    "photosynthesis.md": "Photosynthesis turns light, water and carbon dioxide into glucose and "
    "oxygen.\nChlorophyll in the chloroplasts absorbs red and blue light and reflects green.",
    "tides.txt": "Ocean tides come from the Moon's gravity pulling on the oceans. Spring tides "
    "happen when the Sun and Moon line up; neap tides when they are at right angles.",
    "bicycle.md": "To fix a flat bicycle tyre, remove the wheel, lever off the tyre, find the "
    "puncture and patch the inner tube.\nInflate to the pressure printed on the sidewall.",
    "quicksort.py": 'def quicksort(items):\n    """Sort by picking a pivot and partitioning '
    'smaller and larger elements recursively."""\n    if len(items) < 2:\n        return items\n'
    "    pivot = items[0]\n    return quicksort([x for x in items[1:] if x < pivot]) + [pivot]",
    "honeybees.txt": "Honeybees communicate the direction of flowers with the waggle dance. A "
    "colony has one queen, thousands of worker bees and some drones.\nBees make honey from "
    "nectar and store it in wax combs.",
    "jupiter.md": "Jupiter is the largest planet of the solar system, a gas giant of hydrogen and "
    "helium. Its Great Red Spot is a storm larger than Earth.\nJupiter has dozens of moons, "
    "among them Ganymede, Europa, Io and Callisto.",
    "tax.txt": "Keep receipts for deductible expenses. Income tax returns are due in April; late "
    "filing brings a penalty and interest on the unpaid balance.",
    "coffee.md": "Espresso forces hot water through finely ground coffee at nine bars of "
    "pressure. A cappuccino adds steamed milk and foam; arabica beans taste sweeter than "
    "robusta.",
    "vaccines.txt": "Vaccines train the immune system with a harmless antigen so antibodies and "
    "memory cells are ready before a real infection. Herd immunity protects those who cannot be "
    "vaccinated.",
}

QUESTIONS: list[tuple[str, str]] = [
    ("What is the deadliest hazard when a volcano erupts?", "volcanoes.md"),
    ("How does magma reach the surface?", "volcanoes.md"),
    ("What makes sourdough bread rise?", "sourdough.txt"),
    ("How often should I feed my starter?", "sourdough.txt"),
    ("How should black answer 1.e4 in the Sicilian?", "chess.html"),
    ("How does castling move the king?", "chess.html"),
    ("Why are plant leaves green? Which light does chlorophyll absorb?", "photosynthesis.md"),
    ("What do plants produce from carbon dioxide?", "photosynthesis.md"),
    ("What causes spring tides?", "tides.txt"),
    ("Why do oceans have tides?", "tides.txt"),
    ("How do I patch a punctured inner tube?", "bicycle.md"),
    ("What pressure should the tyre have?", "bicycle.md"),
    ("How does the quicksort function choose a pivot?", "quicksort.py"),
    ("How do bees tell each other where flowers are?", "honeybees.txt"),
    ("Where do bees store their honey?", "honeybees.txt"),
    ("Which storm on Jupiter is larger than Earth?", "jupiter.md"),
    ("Name some moons of Jupiter", "jupiter.md"),
    ("When are income tax returns due?", "tax.txt"),
    ("How much pressure does an espresso machine use?", "coffee.md"),
    ("How does herd immunity protect people?", "vaccines.txt"),
]


def write_corpus(folder: Path, corpus: dict[str, str] = CORPUS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in corpus.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder
