"""Text in the two shapes of issue 30, written for this repository (seeded, reproducible).

Reports written as text: paragraphs of 400-1,000 tokens on one line each, and
tables as bare rows (``cell | cell | cell``: no leading pipe, no separator line)
directly after the paragraph that introduces them.  Three reports, three layouts:

* ``report-group``: paragraphs separated by blank lines, each table on the lines
  right after its introducing paragraph (no blank line between).
* ``report-utility``: no blank line anywhere (one paragraph or row per line).
* ``report-peers``: blank lines, and the introducing sentence ends the paragraph
  with a colon half of the time.

Every fact sentence and every table row is unique, and carries a question
(``type`` "para" for a fact inside a long paragraph, "row" for a table row).
Used by ``build_transfer.py``; not imported by the product.
"""

from __future__ import annotations

import random

CITIES = """Leeds Porto Lyon Gdansk Tampere Bilbao Utrecht Graz Aarhus Brno Cork Turin Ghent Malmo Bergen Kaunas
Seville Dresden Nantes Bologna Linz Tartu Plovdiv Split Cluj Poznan Bremen Lille Valencia Rotterdam""".split()
PEOPLE = """Anna Keller|Tomas Novak|Ingrid Sorensen|Marco Bellini|Claire Dubois|Pieter de Vries|Elena Petrova|
Jonas Lindqvist|Sofia Marquez|Henrik Aalto|Nadia Haddad|Oliver Brennan|Lucia Ferraro|Mateusz Zielinski|
Katarina Horvat|Felix Baumann|Ruth Okafor|Daniel Moreau|Greta Holm|Samuel Varga""".replace("\n", "").split("|")
PARTNERS = """Nordwell Rail|Castor Foods|Helix Pharma|Brightwater Energy|Orion Logistics|Valemont Steel|Quayside Retail|
Arcadia Telecom|Meridian Shipping|Solenne Chemicals|Tallis Aerospace|Fenwick Paper|Kestrel Mining|Larkspur Health|
Monarch Textiles|Pellucid Glass|Redcliff Cement|Sterling Dairy""".replace("\n", "").split("|")
TOPICS = """pension obligations|supplier payment terms|the cyber-security programme|plant safety audits|
the carbon reporting system|warehouse automation|the treasury policy|executive pay|data retention|
the spare-parts business|the dealer network|fleet renewal|product recalls|the customer portal""".replace(
    "\n", ""
).split("|")
FACILITIES = "distribution centre|service hub|training academy|test laboratory|assembly plant|repair depot".split("|")
ENERGY = "biomass boilers|heat pumps|rooftop solar|green hydrogen|a wind power contract|waste heat recovery".split("|")
MONTHS = "January February March April May June July August September October November December".split()
FIELDS = "battery chemistry|sensor design|coatings|membrane filtration|machine vision|low-carbon concrete".split("|")
AUDITORS = "Hartley & Rowe|Ellison Grant|Vogel Partners|Marsh Lindgren".split("|")


DOMAINS = {
    "report-group": {
        "subject": "the group",
        "units": ["Industrial Automation", "Fluid Systems", "Medical Devices", "Rail Components", "Digital Services"],
        "tables": [
            ("revenue", "millions of euros", "Revenue"),
            ("operating profit", "millions of euros", "Operating profit"),
            ("headcount", "employees at year end", "Headcount"),
            ("order intake", "millions of euros", "Order intake"),
        ],
        "row_label": "Segment",
        "years": ["2021", "2022", "2023", "2024"],
    },
    "report-utility": {
        "subject": "the utility",
        "units": [
            "North District",
            "Harbour District",
            "Valley District",
            "Eastern Uplands",
            "City Centre",
            "Lakeside",
        ],
        "tables": [
            ("water supplied", "megalitres per day", "Water supplied"),
            ("leakage", "megalitres per day", "Leakage"),
            ("supply interruptions", "minutes per property", "Interruptions"),
            ("customer complaints", "complaints per 10,000 properties", "Complaints"),
        ],
        "row_label": "District",
        "years": ["2020", "2021", "2022", "2023"],
    },
    "report-peers": {
        "subject": "the company",
        "units": [
            "Aldgate Foods",
            "Brevik Marine",
            "Corvan Industries",
            "Dunmore Plastics",
            "Estrel Packaging",
            "Fairholm Metals",
        ],
        "tables": [
            ("net sales", "millions of euros", "Net sales"),
            ("EBITDA margin", "percent", "EBITDA margin"),
            ("net debt", "millions of euros", "Net debt"),
            ("return on capital", "percent", "Return on capital"),
        ],
        "row_label": "Company",
        "years": ["2022", "2023", "2024"],
    },
}


def _facts(rng: random.Random, subject: str, units: list[str]) -> list[tuple[str, str]]:
    """(sentence, question) pairs, every one naming a different combination."""
    cities = CITIES[:]
    rng.shuffle(cities)
    people = PEOPLE[:]
    rng.shuffle(people)
    partners = PARTNERS[:]
    rng.shuffle(partners)
    topics = TOPICS[:]
    rng.shuffle(topics)
    out: list[tuple[str, str]] = []
    S = subject[0].upper() + subject[1:]
    for i, city in enumerate(cities + cities):
        n = rng.randint(40, 900)
        kind = (i + (3 if i >= len(cities) else 0)) % 6
        if kind == 0:
            fac = FACILITIES[i // 6 % len(FACILITIES)]
            year = rng.choice(["2019", "2020", "2021", "2022", "2023"])
            out.append(
                (
                    f"In {year} {subject} opened a {fac} in {city}, which now employs {n} people.",
                    f"How many people work at the {fac} opened in {city}?",
                )
            )
        elif kind == 1:
            days = rng.randint(3, 40)
            month = rng.choice(MONTHS)
            out.append(
                (
                    f"A fire at the {city} site in {month} halted work there for {days} days and cost about "
                    f"{rng.randint(2, 30)} million in lost output.",
                    f"How long was work halted after the fire at the {city} site?",
                )
            )
        elif kind == 2:
            pct = rng.randint(5, 35)
            energy = ENERGY[i // 6 % len(ENERGY)]
            out.append(
                (
                    f"Energy use per unit of output at {city} dropped {pct} percent after the site switched to "
                    f"{energy}.",
                    f"What did the {city} site switch to in order to cut its energy use?",
                )
            )
        elif kind == 3:
            partner = partners.pop() if partners else f"{city} Council"
            years = rng.randint(3, 12)
            out.append(
                (
                    f"{S} signed a {years}-year agreement with {partner} to serve its operations in {city}, "
                    f"worth roughly {rng.randint(20, 400)} million over its life.",
                    f"How long is the agreement with {partner}?",
                )
            )
        elif kind == 4:
            person = people.pop() if len(people) > len(units) else f"The head of the {city} office"
            topic = topics.pop() if topics else rng.choice(FIELDS)
            out.append(
                (
                    f"{person}, who moved from the {city} office to head office in {rng.choice(MONTHS)}, now "
                    f"leads the review of {topic}.",
                    f"Who leads the review of {topic}?",
                )
            )
        else:
            acquired = partners.pop() if partners else f"{city} Works"
            out.append(
                (
                    f"Headcount in {city} rose by {n} after {subject} completed the purchase of a business "
                    f"from {acquired}.",
                    f"By how much did headcount in {city} rise after the purchase from {acquired}?",
                )
            )
    for unit in units:
        amt = rng.randint(50, 900)
        person = people.pop()
        out.append(
            (
                f"{person} became managing director of {unit} in {rng.choice(MONTHS)} after "
                f"{rng.randint(4, 20)} years with the business.",
                f"Who is the managing director of {unit}?",
            )
        )
        capex = rng.randint(5, 120)
        purpose = rng.choice(
            [
                "new production lines",
                "IT systems",
                "a new headquarters",
                "fleet vehicles",
                "network upgrades",
                "safety equipment",
            ]
        )
        out.append(
            (
                f"Capital spending at {unit} reached {capex} million, most of it on {purpose}.",
                f"What did {unit} spend most of its capital budget on?",
            )
        )
        out.append(
            (
                f"The order backlog of {unit} stood at {amt} million at the end of the year, the highest "
                f"level since the unit was formed.",
                f"What was the order backlog of {unit} at year end?",
            )
        )
        field = rng.choice(FIELDS)
        out.append(
            (
                f"Research spending at {unit} went mostly to {field}, and {rng.randint(3, 60)} patent "
                f"applications were filed there.",
                f"What did {unit} spend most of its research budget on?",
            )
        )
    auditor = rng.choice(AUDITORS)
    out.append(
        (
            f"The auditors, {auditor}, named the valuation of goodwill as a key audit matter.",
            "Which firm audited the accounts?",
        )
    )
    out.append(
        (
            f"The board proposes a dividend of {rng.randint(20, 180)} cents per share, payable in "
            f"{rng.choice(MONTHS)}.",
            "What dividend per share does the board propose?",
        )
    )
    rng.shuffle(out)
    return out


def _value(rng: random.Random, unit_label: str) -> str:
    if unit_label == "percent":
        return f"{rng.uniform(2, 30):.1f}"
    if unit_label.startswith("employees"):
        return f"{rng.randint(300, 9000):,}"
    if "minutes" in unit_label or "complaints" in unit_label:
        return f"{rng.uniform(3, 90):.1f}"
    return f"{rng.uniform(20, 2500):,.1f}"


def build(name: str, seed: int) -> tuple[str, list[dict]]:
    """The report's text and its questions (``question``, ``quote``, ``type``)."""
    rng = random.Random(seed)
    spec = DOMAINS[name]
    subject, units, years = spec["subject"], spec["units"], spec["years"]
    facts = _facts(rng, subject, units)
    questions: list[dict] = []
    paragraphs: list[list[str]] = []  # a paragraph is one line, optionally followed by table rows
    per = -(-len(facts) // 4)
    chunks = [facts[i : i + per] for i in range(0, len(facts), per)]
    tables = spec["tables"]
    colon = name == "report-peers"
    for p, group in enumerate(chunks):
        sentences = [s for s, _q in group]
        for n, (s, q) in enumerate(group):
            if n % 2 == 0:
                questions.append({"question": q, "quote": s, "type": "para"})
        lines: list[str] = []
        if p < len(tables):
            metric, unit_label, title = tables[p]
            intro = (
                f"The figures for {metric} by {spec['row_label'].lower()}, in {unit_label}, are set out "
                f"below for {years[0]} to {years[-1]}"
            )
            intro += ":" if colon and p % 2 == 0 else "."
            sentences.append(intro)
            header = " | ".join([spec["row_label"]] + years)
            lines.append(header)
            for unit in units:
                cells = [_value(rng, unit_label) for _ in years]
                lines.append(" | ".join([unit] + cells))
                year = rng.choice(years)
                questions.append(
                    {
                        "question": rng.choice(
                            [
                                f"What was the {metric} of {unit} in {year}?",
                                f"{title} for {unit} in {year}?",
                                f"How did {unit} do on {metric} in {year}?",
                            ]
                        ),
                        "quote": lines[-1],
                        "type": "row",
                    }
                )
        paragraphs.append([" ".join(sentences)] + lines)
    title = {
        "report-group": "Annual report of the Tessel Group",
        "report-utility": "Performance report of Marlow Water and Energy",
        "report-peers": "Peer review of listed packaging and materials companies",
    }[name]
    joiner = "\n" if name == "report-utility" else "\n\n"
    body = joiner.join("\n".join(lines) for lines in paragraphs)
    return f"{title}{joiner}{body}\n", questions
