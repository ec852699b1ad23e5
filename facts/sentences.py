"""The sentences the facts are computed on.

Source: every sentence here was written for Cannery by its authors in
November 2026, in our own words, and is released with the project. None is
quoted from a book, a data set or the model's training data. The probe is
about the lesson itself; the held-out sentences are on unrelated everyday
topics, so that the overflow count is not measured on the sentence we chose
to show.
"""

#: The sentence whose Q, K and V the lab ships and the film shows. Long enough
#: (over 64 tokens) that at d = 32 its keys span several key tiles.
PROBE = (
    "Fused attention keeps one tile of queries on the small bench, walks every "
    "tile of keys and values past it, and keeps a running largest score and a "
    "running total, shrinking that total whenever a bigger score turns up, so "
    "the whole table of scores never has to travel out to the warehouse and "
    "back again before the answers are written."
)

#: Held-out sentences: at least 200 query rows (tokens) in all.
HELD_OUT = (
    "The ferry to the island leaves at seven, but on windy mornings it waits in the harbour until the captain decides the swell has dropped.",
    "My grandmother kept her buttons in an old biscuit tin, sorted by colour, and we were allowed to count them only on rainy afternoons.",
    "A good loaf of bread needs flour, water, salt, yeast and patience, and the patience is the ingredient most people forget to measure.",
    "The river froze so hard that winter that the whole village walked across it to the market on the far bank for almost six weeks.",
    "When the power failed, the library staff handed out candles and kept reading aloud to the children until the lights came back.",
    "Bees find their way home by the angle of the sun, and they tell each other where the flowers are with a short, waggling dance.",
    "The old clock in the station hall runs four minutes fast, and every traveller who lives in town has quietly learned to allow for it.",
    "She planted tomatoes along the south wall, beans by the fence, and a row of sunflowers that grew taller than the shed by August.",
    "Our football team lost the first six matches of the season, then won eight in a row after the coach moved the goalkeeper to midfield.",
    "The bridge was painted a bright orange so that ships could see it through the fog that rolls in from the bay most summer evenings.",
    "If you leave the window open overnight, the cat will come in at dawn and sit on your chest until you get up and fill her bowl.",
    "The museum's oldest map shows a coastline that no longer exists, because the sea has taken back several miles of marsh since then.",
)
