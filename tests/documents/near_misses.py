"""A harder labelled set: each question's answer sits in one file, and one or two other files
share its words and topic without answering it (the near misses keyword search falls for).
A reranker that reads the question and the passage together should put the answer first."""

from __future__ import annotations

from pathlib import Path

from tests.documents.files import write_corpus

__all__ = ["NEAR_MISS_CORPUS", "NEAR_MISS_QUESTIONS", "write_near_misses"]

NEAR_MISS_CORPUS: dict[str, str] = {
    "boiling-sea-level.md": "Water boils at 100 degrees Celsius at sea level, where the air "
    "pressure is one atmosphere. Boiling water is used to cook pasta and to sterilise bottles.",
    "boiling-everest.md": "On the summit of Mount Everest the air pressure is about a third of "
    "that at sea level, so water there boils at roughly 70 degrees Celsius and tea tastes weak.",
    "everest-climbing.md": "On top of Everest the temperature falls to minus 36 degrees at night; "
    "climbers on top of Everest boil snow for drinking water and carry bottled oxygen.",
    "python-lists.md": "A Python list keeps items in order and can be changed in place: append "
    "adds one item at the end, and sort orders the list itself. A list can be used as a stack, "
    "and list(d) gives a dictionary's keys as a Python list.",
    "python-tuples.md": "A Python tuple cannot be changed after it is made, so a tuple can be a "
    "dictionary key while a list cannot: tuples are immutable and hashable.",
    "python-sets.md": "A Python set holds each item once; adding an item that is already in the "
    "set changes nothing, and membership tests are fast.",
    "coffee-caffeine.md": "A cup of brewed coffee holds about 95 milligrams of caffeine; a shot of "
    "espresso holds about 63 milligrams, less per cup but more per millilitre.",
    "coffee-history.md": "Coffee spread from Ethiopia to Yemen and then to Europe in the 17th "
    "century, when coffee houses opened in Venice and London.",
    "tea-caffeine.md": "A cup of black tea holds about 47 milligrams of caffeine and green tea "
    "about 28 milligrams, roughly half the caffeine of a cup of coffee; a cup of decaffeinated "
    "coffee holds almost no caffeine.",
    "moon-distance.md": "How far away is the Moon? It orbits the Earth at an average distance of "
    "384,400 kilometres, far closer than the Sun; light from the Moon reaches Earth in about "
    "1.3 seconds.",
    "moon-phases.md": "The phases of the Moon, from new moon to full moon and back, repeat every "
    "29.5 days as the Moon orbits the Earth.",
    "sun-distance.md": "The Earth orbits the Sun at an average distance of 150 million "
    "kilometres; sunlight takes about 8 minutes and 20 seconds to reach the Earth.",
    "passport-renew.md": "To renew a passport, first send the old passport, a new photo and the "
    "form; renewal takes about three weeks. Do not renew a stolen passport: it is no longer "
    "yours to send.",
    "passport-lost.md": "If a passport is lost or stolen, report it to the police first, then "
    "apply for a replacement passport with the police report.",
    "visa-apply.md": "A visa is applied for at the embassy of the country you will visit; a "
    "passport valid for six months is needed to apply for a visa.",
    "bread-yeast.md": "Bread dough with yeast must rise for one to two hours in a warm place "
    "before baking, until it has doubled in size. You can keep bread dough in the fridge "
    "overnight for a slow rise.",
    "bread-oven.md": "Bake a loaf of bread at 220 degrees Celsius for 35 minutes, until the crust "
    "is brown and the loaf sounds hollow when tapped underneath.",
    "bread-storage.md": "Keep bread in a paper bag at room temperature; bread goes stale faster "
    "in the fridge, and slices freeze well for a month.",
}

NEAR_MISS_QUESTIONS: list[tuple[str, str]] = [
    ("At what temperature does water boil on top of Everest?", "boiling-everest.md"),
    ("At what temperature does water boil at sea level?", "boiling-sea-level.md"),
    ("Why does tea taste weak on Everest?", "boiling-everest.md"),
    ("Can a Python list be used as a dictionary key?", "python-tuples.md"),
    ("How do I add one item to the end of a Python list?", "python-lists.md"),
    ("What happens when I add an item a set already has?", "python-sets.md"),
    ("How much caffeine is in a cup of coffee?", "coffee-caffeine.md"),
    ("How much caffeine does green tea have?", "tea-caffeine.md"),
    ("When did coffee reach Europe?", "coffee-history.md"),
    ("How long does light take to come from the Moon?", "moon-distance.md"),
    ("How far away is the Sun?", "sun-distance.md"),
    ("How often do the Moon's phases repeat?", "moon-phases.md"),
    ("What should I do first when my passport is stolen?", "passport-lost.md"),
    ("How long does it take to renew a passport?", "passport-renew.md"),
    ("How long must a passport be valid to apply for a visa?", "visa-apply.md"),
    ("How hot should the oven be to bake bread?", "bread-oven.md"),
    ("How long should bread dough rise?", "bread-yeast.md"),
    ("Should I keep bread in the fridge?", "bread-storage.md"),
]


def write_near_misses(folder: Path) -> Path:
    return write_corpus(folder, NEAR_MISS_CORPUS)
