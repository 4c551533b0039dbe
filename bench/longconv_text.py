"""What the generated chats of bench/longconv.py say: the value banks, the kinds of fact (how
each is stated, asked and changed), and the topics' assistant answers (headings, advice lines,
lines in the questions' own words, structured blocks).

Data, not logic: bench/longconv.py's builder draws from it with its seeded random generator.
"""

import random
from dataclasses import dataclass, field
from typing import Any

# ------------------------------------------------------------------------------ the banks


def words(text: str) -> list[str]:
    return [w.strip() for w in text.split(",") if w.strip()]


FIRST = words(
    "Priya, Tomas, Lena, Kofi, Amara, Felix, Ines, Marco, Yuki, Nadia, Omar, Hanna, Lucas, "
    "Greta, Ivo, Rosa, Bram, Zofia, Theo, Maren, Kwame, Lotte, Pavel, Sofia, Aiko, Bruno, "
    "Celia, Dmitri, Esme, Farid, Gemma, Hugo, Ilse, Jonas, Keiko, Luca, Mira, Nils, Odile, "
    "Pablo, Quinn, Rania, Stefan, Talia, Umar, Vera, Wim, Xenia, Yara, Zane, Alba, Bastian, "
    "Chiara, Dario, Elif, Fabian, Gita, Henrik, Imani, Jakob, Kira, Leandro, Maja, Nour, "
    "Oskar, Petra, Rafael, Saoirse, Tobias, Ulla, Viktor, Wanda, Yusuf, Anouk, Benedikt, "
    "Carmen, Desmond, Elin, Florin, Gustavo, Hedda, Isak, Jovana, Kasper, Linnea, Mateo, "
    "Noor, Orla, Piet, Rhea, Sander, Thea, Uriel, Valentina, Wes, Ximena, Yannick, Zora"
)
LAST = words(
    "Whitfield, Okafor, Brooks, Patel, Olsen, Natarajan, Reyes, Fischer, Mensah, Diallo, "
    "Novak, Moreau, Castell, Tanaka, Haddad, Lindqvist, Rossi, Vermeer, Kowalski, Andersen, "
    "Silva, Dubois, Hartmann, Quist, Ferreira, Byrne, Ionescu, Sato, Mbeki, Achterberg, "
    "Bianchi, Costa, Delacroix, Eriksen, Fonseca, Galloway, Horvath, Ibarra, Jansen, Kaur, "
    "Laine, Marchetti, Nakamura, Oyelaran, Petrov, Quintero, Rahman, Sorensen, Thibault, "
    "Urquhart, Valdez, Wozniak, Yilmaz, Zeller, Abernathy, Bjork, Caruso, Dunmore, Esposito, "
    "Falk, Grieve, Holloway, Iversen, Jaramillo, Kessler, Lombardi, Mwangi, Nieminen, "
    "Ortega, Pereira, Rourke, Strand, Takahashi, Uddin, Varga, Westergaard, Amsel, Borowski"
)
NOUN = words(
    "Fig, Olive, Lantern, Copper, Anchor, Juniper, Saffron, Harbour, Willow, Ember, Thistle, "
    "Magpie, Orchard, Pebble, Heron, Clove, Sparrow, Quarry, Bramble, Cedar, Fennel, Marigold, "
    "Tide, Falcon, Larder, Meadow, Otter, Ridge, Cobble, Lark, Mulberry, Kiln, Hollow, "
    "Beacon, Gable, Hazel, Ivy, Jasper, Kestrel, Linden, Moss, Nettle, Oak, Poppy, Quince, "
    "Rook, Sorrel, Tamarind, Umber, Vine, Wren, Yarrow, Acorn, Birch, Cormorant, Dune, Elm, "
    "Fern, Garnet, Hearth"
)
ADJ = words(
    "Golden, Crooked, Little, Blue, Salt, Quiet, Wild, Old, Green, Silver, Hidden, Velvet, "
    "Rusty, Bright, Tall, Lazy, Red, Northern, Sunken, Hungry, Painted, Wandering, Humble, "
    "Gentle, Copper, Stone, Amber, Iron, Paper, Lucky"
)
SOFT = words(
    "Alba, Bellavista, Corvo, Dorada, Estrela, Fiore, Girasole, Luz, Marea, Nube, Oliva, "
    "Palma, Rocca, Sereno, Terra, Ulivo, Verde, Zafiro, Brisa, Cielo, Duna, Farol, Gaviota, "
    "Lumen, Miramar, Nido, Onda, Pino, Rio, Sol"
)
CITIES = words(
    "Lisbon, Porto, Seville, Valencia, Bologna, Trieste, Ljubljana, Zagreb, Split, Krakow, "
    "Gdansk, Tallinn, Riga, Vilnius, Helsinki, Bergen, Gothenburg, Aarhus, Ghent, Utrecht, "
    "Lyon, Bordeaux, Marseille, Nantes, Basel, Innsbruck, Salzburg, Graz, Brno, Budapest, "
    "Sofia, Plovdiv, Thessaloniki, Chania, Valletta, Palermo, Naples, Bari, Girona, Bilbao, "
    "Edinburgh, Galway, Cork, Belfast, Reykjavik, Kyoto, Osaka, Fukuoka, Busan, Taipei, "
    "Hanoi, Hoi An, Chiang Mai, Penang, Kuching, Oaxaca, Merida, Cartagena, Cusco, Valparaiso, "
    "Montevideo, Quebec City, Halifax, Savannah, Santa Fe, Tbilisi, Yerevan, Marrakesh, "
    "Essaouira, Zanzibar, Cape Town, Hobart, Wellington, Queenstown"
)
DISHES = words(
    "black garlic ramen, lamb kofta with pickled onions, miso-glazed aubergine, "
    "saffron risotto, pork belly bao, charred octopus with romesco, smoked trout rillettes, "
    "duck confit with lentils, crab linguine, beef cheek ragu, spiced cauliflower steak, "
    "sea bass ceviche, chicken katsu curry, mushroom and chestnut pithivier, "
    "braised short ribs, pistachio panna cotta, burnt Basque cheesecake, green shakshuka, "
    "harissa roast carrots, tonkotsu broth, rabbit stew with prunes, fennel and orange salad, "
    "grilled halloumi flatbread, sticky toffee pudding, clam chowder, prawn saganaki, "
    "gnocchi with brown butter and sage, Sichuan dan dan noodles, jerk chicken with rice and "
    "peas, lemon and ricotta pancakes, pea and mint soup, chorizo and bean stew, "
    "roast squash with dukkah, pho with brisket, tarte tatin, salt cod fritters, "
    "venison pie, massaman curry, baked feta pasta, bibimbap with gochujang, "
    "seared scallops with cauliflower puree, lamb tagine with apricots, cacio e pepe, "
    "coconut dal, paella de marisco, beetroot and goat cheese tart, cardamom buns, "
    "pulled jackfruit tacos, chicken pot pie, tiramisu with marsala, okonomiyaki, "
    "Thai green curry with aubergine, arancini with nduja, steak frites, moussaka, "
    "kimchi fried rice, sweet potato gnocchi, pierogi with sour cream, bouillabaisse, "
    "Welsh rarebit, tamarind prawns, mapo tofu, ratatouille, croque madame, "
    "ginger and spring onion crab, Persian jewelled rice, chana masala, "
    "hake with salsa verde, rhubarb crumble, fig and prosciutto pizza, pasteis de nata, "
    "mole poblano, lobster roll, Vietnamese banh xeo, tortilla espanola, focaccia with olives, "
    "cod with chorizo crumb, halibut with beurre blanc, laksa, Korean fried chicken, "
    "pumpkin ravioli, chicken shawarma, smoked mackerel pate, butternut squash soup, "
    "pork and fennel sausages, orange polenta cake, falafel with tahini, salmon teriyaki, "
    "dumplings with black vinegar, aloo gobi, beef rendang, polenta with wild mushrooms"
)
GIFTS = words(
    "a hand-thrown ramen bowl set, a vintage film camera, a weekend pottery class, "
    "a cast-iron skillet, a star map print of our first date, a leather-bound sketchbook, "
    "noise-cancelling headphones, a sourdough starter kit, a silk scarf from the market, "
    "a mechanical keyboard, a bird feeder camera, a cocktail-making course, "
    "a personalised star chart, an indoor herb garden, a wool picnic blanket, "
    "a first-edition paperback, a cold brew coffee maker, a hammock, a bonsai starter kit, "
    "a tandem skydive voucher, a label maker, a kayak rental day, a handmade chess set, "
    "a set of watercolour paints, a wine tasting evening, a knitting kit, "
    "a French press and beans, a retro arcade stick, a ceramic teapot, a climbing day pass, "
    "a weighted blanket, a hot sauce subscription, a telescope, a brass compass, "
    "a monogrammed apron, a jigsaw of their hometown, a foot spa, a record player, "
    "a cheese-making kit, a hot air balloon ride, a pasta machine, a sunrise alarm clock"
)
PLANTS = words(
    "sweet peas, dwarf French beans, cavolo nero, rainbow chard, Tumbling Tom tomatoes, "
    "lemon thyme, purple sprouting broccoli, garlic chives, alpine strawberries, "
    "Jerusalem artichokes, blueberry bushes, runner beans, winter purslane, "
    "Japanese anemones, foxgloves, lavender Hidcote, hostas, astrantia, ferns, heucheras, "
    "courgettes, pak choi, broad beans, rocket, nasturtiums, marigolds, borage, chamomile, "
    "echinacea, salvias, a fig tree, a dwarf apple tree, rhubarb crowns, asparagus crowns, "
    "snowdrops, crocuses, alliums, dahlias, sunflowers, cosmos, sweet williams, wallflowers, "
    "a climbing rose, clematis, honeysuckle, jasmine, mint in a pot, oregano, coriander, "
    "parsnips, beetroot, radishes, shallots, red onion sets, leeks, cucumbers, chillies"
)
EXERCISES = words(
    "Copenhagen planks, single-leg Romanian deadlifts, Bulgarian split squats, dead bugs, "
    "Pallof presses, tibialis raises, Nordic hamstring curls, bird dogs, face pulls, "
    "goblet squats, side-lying clamshells, hip airplanes, farmer carries, box step-downs, "
    "calf raises on a step, glute bridges with a pause, banded pull-aparts, "
    "Turkish get-ups, hollow body holds, thoracic rotations, wall sits, lateral band walks, "
    "suitcase carries, reverse lunges, spanish squats, cossack squats, kettlebell swings, "
    "inverted rows, heel drops, ankle alphabet drills"
)
LIBRARIES = words(
    "tenacity, structlog, pydantic, orjson, polars, hypothesis, rich, typer, attrs, "
    "anyio, trio, loguru, cattrs, msgspec, duckdb, sqlglot, pendulum, arrow, httpx, "
    "aiohttp, celery, dramatiq, huey, rq, alembic, marshmallow, pytest-xdist, "
    "freezegun, respx, vcrpy, factory_boy, faker, tabulate, humanize, cachetools, "
    "diskcache, zstandard, lz4, xxhash, rapidfuzz, jinja2, mistune, markdown-it-py, "
    "watchfiles, psutil, py-spy, memray, scalene, ruff, mypy, pyright, nox, tox, hatch"
)
TASKS = words(
    "retrying flaky HTTP calls, structured logging, validating config files, "
    "parsing huge JSON logs, property-based tests, a small CLI, fuzzy matching customer "
    "names, profiling memory leaks, caching expensive lookups, background jobs, "
    "mocking HTTP in tests, time-travel in tests, formatting tables in the terminal, "
    "compressing old exports, hashing files quickly, rendering email templates, "
    "watching a folder for changes, querying Parquet files"
)
FRAMEWORKS = words(
    "Django, Rails, Phoenix, Laravel, Spring Boot, FastAPI, Express, NestJS, Flask, "
    "ASP.NET Core, Symfony, Ktor, Gin, Actix, SvelteKit, Next.js, Remix, Nuxt"
)
CAUSES = words(
    "an expired TLS certificate on the load balancer, a missing index on the orders table, "
    "a retry storm from the mobile app, a config flag flipped in the wrong region, "
    "a disk full of debug logs, a DNS record with a one-week TTL, "
    "a cron job running twice after the clocks changed, a memory leak in the image resizer, "
    "a connection pool capped at five, a cache stampede after a deploy, "
    "a vendor API silently changing its rate limit, a migration locking the users table, "
    "a typo in the feature flag name, a runaway analytics query, "
    "an out-of-date root certificate on the workers, a queue consumer stuck on a poison message, "
    "clock drift on one database replica, a circular import after the refactor, "
    "a forgotten test API key in production, an integer overflow in the invoice counter"
)
DECISIONS = words(
    "ship the web app first and park the Android beta, cut the onboarding survey to "
    "three questions, move the pricing page test to after the launch, "
    "hire a contractor for the data migration, freeze new features for two sprints, "
    "drop the custom CMS and go with a hosted one, run the beta with ten design partners, "
    "merge the two dashboards into one, charge annually only for the first cohort, "
    "rewrite the importer instead of patching it, add a read-only mode before the launch, "
    "move the team offsite to the spring, stop supporting Internet Explorer, "
    "split the monolith's billing module out first, pay down the flaky test backlog first"
)
VET_FINDINGS = words(
    "a mild ear infection, two loose molars that need pulling, a grade two heart murmur, "
    "early arthritis in the left hip, a grass seed lodged between the toes, "
    "a slightly underactive thyroid, sensitive skin from the new shampoo, "
    "tartar build-up that needs a scale and polish, a pulled shoulder muscle, "
    "a harmless fatty lump on the ribs, a food intolerance to chicken, a cracked claw"
)
BLOOD = words(
    "ferritin at 14, vitamin D at 19, cholesterol at 6.1, B12 at 180, "
    "thyroid TSH at 4.8, HbA1c at 41, iron saturation at 12 percent, folate at 2.9"
)
ROOMS = words("hallway, spare room, kitchen, bathroom, bedroom, living room, study, landing")
COLOURS = words(
    "Sage Mist, Smoked Plum, Harbour Blue, Oat Milk, Terracotta Dust, Pale Lichen, "
    "Midnight Teal, Chalk Pink, Olive Grove, Storm Cloud, Buttermilk, Rust Ember, "
    "Fjord Green, Linen White, Mushroom Grey, Saffron Gold, Deep Sea, Clay Rose"
)
TITLES = words(
    "senior data analyst, product manager, staff engineer, engineering manager, "
    "head of design, customer success lead, solutions architect, operations manager, "
    "principal consultant, research scientist, marketing director, UX researcher, "
    "technical writer, platform team lead, finance business partner, delivery manager"
)
DIETS = words(
    "pescatarian, vegetarian, low-FODMAP, dairy-free, gluten-free, mostly plant-based, "
    "low-sugar, high-protein"
)
PHONES = words(
    "Pixel 9a, iPhone 16e, Fairphone 5, Galaxy S24 FE, Nothing Phone 3a, Moto Edge 50, "
    "Xperia 10 VI, OnePlus Nord 4, iPhone 15 Pro, Pixel 8 Pro, Galaxy A55, Honor Magic6"
)
CARS = words(
    "Skoda Octavia estate, Kia Niro EV, Toyota Corolla hybrid, VW ID.3, Volvo V60, "
    "Renault Zoe, Honda Jazz, Mazda CX-30, Hyundai Ioniq 5, Dacia Jogger, MG4, Fiat 500e, "
    "Peugeot 308 SW, Tesla Model 3, Nissan Leaf, Ford Puma"
)
LANGS = words("Portuguese, Japanese, Italian, Dutch, Korean, Greek, Polish, Turkish, Swedish")
ACTIVITIES = words(
    "judo, swimming lessons, chess club, piano, junior parkrun, drama club, coding club, "
    "climbing, gymnastics, choir, football training, ballet, scouts, karate, violin, "
    "tennis, rugby tots, art club, Lego robotics, fencing"
)
PROVIDERS = words("FibreNest, Hyperlink, Zeta Broadband, Lumo Fibre, Skein, Clearwave, Orbit Net")
BREEDS = words(
    "beagle, corgi, whippet, border collie, dachshund, vizsla, schnauzer, cockapoo, "
    "Shiba Inu, greyhound, spaniel, labrador, Bernese mountain dog, basenji, poodle"
)
PETNAMES = words(
    "Waffles, Biscuit, Juno, Ziggy, Rolo, Pickle, Mochi, Nacho, Clementine, Pretzel, "
    "Dumpling, Basil, Noodle, Tofu, Marmalade, Crumpet, Sprout, Toffee, Pip, Bramble"
)
COURSES = words(
    "Practical Statistics, Intro to Woodworking, Conversational Italian, Data Visualisation "
    "Basics, Negotiation Essentials, Bread Baking Fundamentals, Writing for the Web, "
    "Public Speaking Lab, Beginner Watercolour, Personal Finance 101, Photography Foundations"
)
PLATFORMS = words("Coursera, edX, Skillshare, the local college, FutureLearn, the library")
FUND_RECS = words(
    "a global index fund with a fee under 0.2 percent, a fixed-rate cash ISA for two years, "
    "an easy-access saver paying 4.1 percent, a government bond ladder, "
    "a target-date pension fund, a premium bonds pot, a money market fund, "
    "an overpayment on the mortgage, a high-interest regular saver, "
    "a 60/40 multi-asset fund, a stocks and shares ISA with monthly drip-feeding"
)
HOME_RECS = words(
    "a dehumidifier with a laundry mode, a smart thermostatic radiator valve, "
    "an induction hob, a cordless stick vacuum, a water softener, a mesh wifi system, "
    "a heated clothes airer, a robot lawn mower, a video doorbell, a draught excluder kit, "
    "a heat pump tumble dryer, an air purifier with a HEPA filter"
)
PET_RECS = words(
    "a lick mat with frozen yoghurt, a snuffle mat, a rubber chew toy you can stuff, "
    "a flirt pole, a puzzle feeder, a long line for recall practice, a calming collar, "
    "a cooling mat, a harness with a front clip, an antler chew"
)
TOPIC_AREAS = words(
    "my lower back, my left knee, my shoulder, my posture at the desk, my running form, "
    "my ankle after the sprain, my core strength, my grip strength, my hip mobility"
)
REC_GOALS = words(
    "the emergency fund, the bonus from work, the house deposit, the money from Grandma, "
    "the kids' savings, the sabbatical fund, the tax refund, the wedding pot"
)
OCCASIONS = words(
    "birthday, anniversary, graduation, housewarming, retirement, promotion, name day"
)
DINNERS = words(
    "a vegetarian dinner for six, a picnic that travels well, a make-ahead Sunday lunch, "
    "a dinner party with one gluten-free guest, a cheap week of lunches, "
    "a first dinner at the in-laws', a summer barbecue without meat, "
    "a rainy-day comfort meal, a date night at home, a big batch to freeze"
)
SEASONS = words("spring, early summer, late summer, autumn, the winter holidays, Easter")
MONTHS = (
    "January February March April May June July August September October November December"
).split()


SERVICE_PARTS = ("api", "worker", "gateway", "sync", "indexer", "scheduler")
BRANDS = ("Korvo", "Aldan", "Nimbus", "Vessa", "Tarn", "Ostra", "Lumo", "Brisk")
RACES = ("half marathon", "marathon", "10K", "trail 25K", "sprint triathlon")
RACE_MINUTES = {  # a plausible finishing time's range for each distance
    "half marathon": (85, 150),
    "marathon": (180, 330),
    "10K": (38, 70),
    "trail 25K": (130, 240),
    "sprint triathlon": (65, 110),
}


def racetime(rng: random.Random, race: str) -> str:
    """A finishing time (h:mm:ss) that fits the race's distance."""
    lo, hi = next(span for name, span in RACE_MINUTES.items() if race.endswith(" " + name))
    seconds = rng.randint(lo * 60, hi * 60)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
DOSE_EVERY = ("daily", "every other day", "twice a week")


CURRENCY = "¤"  # the builder puts the chat's one currency symbol in its place


def _money(rng: random.Random, lo: int, hi: int, step: int) -> str:
    return f"{CURRENCY}{rng.randrange(lo, hi, step):,}"


def _day(rng: random.Random) -> str:
    return f"{rng.randint(1, 28)} {rng.choice(MONTHS)}"


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


PET_PROBLEMS = words(
    "chewing, barking at the door, pulling on the lead, separation anxiety, "
    "rainy-day boredom, jumping up at guests, stealing food, fear of fireworks"
)
SKILL_GOALS = words(
    "data skills, a creative hobby, something hands-on, public speaking nerves, "
    "moving into management, a side project, writing better emails, understanding money"
)
NEEDS = words(
    "a laptop for photo editing, a tablet for Mum, headphones for the commute, "
    "a smartwatch for running, an e-reader, a webcam for calls, a speaker for the kitchen, "
    "a travel router, a kids' tablet, a dashcam, a portable monitor, a fitness tracker"
)
COMPLAINTS = words(
    "sleeping badly, afternoon slumps, eye strain, tension headaches, a stiff neck, "
    "late-night snacking, waking at 4 am, too much screen time, low mood in winter"
)
MEETINGS = words(
    "my one-to-one, the quarterly review, the team retro, the budget meeting, "
    "the kickoff with the new client, the all-hands, my promotion conversation, "
    "the vendor negotiation, the hiring panel debrief"
)
HABITS = words(
    "the 20-20-20 rule for screens, a fixed 7:00 wake-up, a ten-minute walk after lunch, "
    "no caffeine after noon, a phone-free first hour, a wind-down alarm at 22:00, "
    "a glass of water before coffee, morning daylight for fifteen minutes, "
    "a protein breakfast, a short stretch every hour, reading on paper before bed, "
    "a worry list written at 18:00, box breathing for four minutes"
)
OPENERS_BANK = words(
    "the three numbers that moved this quarter, a one-line summary of the decision you need, "
    "a question about their priorities, the customer quote from last week, "
    "the risk nobody has named yet, a thank-you to the team by name, "
    "the single slide with the timeline, what changed since the last meeting, "
    "the trade-off you want them to choose between, a two-minute demo"
)
# A bank draws one value; the builder draws again while it is already used in the chat.
BANKS: dict[str, Any] = {
    "person": _person,
    "hotel": lambda r: r.choice(
        (
            f"Hotel {r.choice(LAST)}",
            f"Casa {r.choice(SOFT)}",
            f"the {r.choice(ADJ)} {r.choice(NOUN)} Inn",
            f"{r.choice(NOUN)} House",
            f"Pension {r.choice(SOFT)}",
            f"the {r.choice(LAST)} Suites",
        )
    ),
    "restaurant": lambda r: r.choice(
        (
            f"{r.choice(NOUN)} & {r.choice(NOUN)}",
            f"the {r.choice(ADJ)} {r.choice(NOUN)}",
            f"Trattoria {r.choice(SOFT)}",
            f"{r.choice(SOFT)} Kitchen",
            f"Bar {r.choice(SOFT)}",
            f"{r.choice(LAST)}'s Table",
        )
    ),
    "dish": lambda r: r.choice(DISHES),
    "gift": lambda r: r.choice(GIFTS),
    "plant": lambda r: r.choice(PLANTS),
    "exercise": lambda r: r.choice(EXERCISES),
    "library": lambda r: r.choice(LIBRARIES),
    "framework": lambda r: r.choice(FRAMEWORKS),
    "cause": lambda r: r.choice(CAUSES),
    "decision": lambda r: r.choice(DECISIONS),
    "finding": lambda r: r.choice(VET_FINDINGS),
    "blood": lambda r: r.choice(BLOOD),
    "colour": lambda r: r.choice(COLOURS),
    "title": lambda r: r.choice(TITLES),
    "diet": lambda r: r.choice(DIETS),
    "phone": lambda r: r.choice(PHONES),
    "car": lambda r: r.choice(CARS),
    "activity": lambda r: r.choice(ACTIVITIES),
    "provider": lambda r: r.choice(PROVIDERS),
    "petname": lambda r: r.choice(PETNAMES),
    "course": lambda r: f"{r.choice(COURSES)} on {r.choice(PLATFORMS)}",
    "fund": lambda r: r.choice(FUND_RECS),
    "homerec": lambda r: r.choice(HOME_RECS),
    "petrec": lambda r: r.choice(PET_RECS),
    "book": lambda r: r.choice(
        (
            f"The {r.choice(ADJ)} {r.choice(NOUN)}",
            f"{r.choice(NOUN)} of the {r.choice(NOUN)}s",
            f"A {r.choice(NOUN)} in {r.choice(CITIES)}",
            f"The {r.choice(NOUN)} Keeper",
            f"Last Train to {r.choice(CITIES)}",
        )
    ),
    "band": lambda r: r.choice(
        (
            f"The {r.choice(ADJ)} {r.choice(NOUN)}s",
            f"{r.choice(NOUN)} {r.choice(NOUN)}",
            f"{r.choice(SOFT)} Collective",
        )
    ),
    "venue": lambda r: r.choice(
        (f"the {r.choice(NOUN)} Rooms", f"{r.choice(LAST)} Hall", f"the {r.choice(NOUN)} Works")
    ),
    "gym": lambda r: r.choice(
        (
            f"{r.choice(NOUN)} Fitness",
            f"the {r.choice(ADJ)} Barbell Club",
            f"{r.choice(NOUN)} Climbing Wall",
            f"{r.choice(NOUN)} Leisure Centre",
        )
    ),
    "clinic": lambda r: r.choice(
        (f"{r.choice(NOUN)} Veterinary Clinic", f"{r.choice(LAST)} Animal Hospital")
    ),
    "practice": lambda r: f"the {r.choice(NOUN)} {r.choice(('Surgery', 'Medical Centre'))}",
    "company": lambda r: r.choice(
        (
            f"{r.choice(NOUN)} Labs",
            f"{r.choice(NOUN)}works",
            f"{r.choice(ADJ)} {r.choice(NOUN)} Studio",
            f"{r.choice(LAST)} & Partners",
        )
    ),
    "service": lambda r: f"{r.choice(NOUN).lower()}-{r.choice(SERVICE_PARTS)}",
    "product": lambda r: f"the {r.choice(BRANDS)} {r.choice(NOUN)} {r.randint(2, 9)}",
    "race": lambda r: f"{r.choice(CITIES)} {r.choice(RACES)}",
    "weekly": lambda r: f"{r.randrange(15, 80, 1)} km",
    "rent": lambda r: _money(r, 900, 3200, 5),
    "goal_amount": lambda r: _money(r, 4000, 60000, 250),
    "budget": lambda r: _money(r, 250, 1200, 5),
    "price": lambda r: _money(r, 80, 2400, 5),
    "day": _day,
    "slot": lambda r: f"{r.choice(WEEKDAYS)} at {r.randint(8, 17)}:{r.choice(('00', '30'))}",
    "flight": lambda r: (
        f"{_day(r)}, departing {r.randint(5, 22):02d}:{r.choice(('05', '20', '35', '50'))}"
    ),
    "standup": lambda r: f"{r.randint(8, 11)}:{r.choice(('05', '10', '20', '35', '40', '50'))}",
    "dose": lambda r: (
        f"{r.choice(('1,000', '2,000', '3,000', '4,000'))} IU of vitamin D {r.choice(DOSE_EVERY)}"
    ),
    "score": lambda r: f"{r.randint(61, 98)} out of 100",
    "level": lambda r: r.choice(("A2", "B1", "B2", "C1")),
    "habit": lambda r: r.choice(HABITS),
    "rating": lambda r: f"{r.randint(2, 9)}.{r.choice((0, 5))} out of 10",
    "opener": lambda r: r.choice(OPENERS_BANK),
}
CATEGORIES = words(
    "headphones, e-bike, laptop, coffee machine, standing desk, camera, sofa, road bike, "
    "tablet, vacuum cleaner, air fryer, monitor, mattress, smartwatch, espresso grinder"
)
PARTS = {  # slots filled from plain lists (may repeat: not answers)
    "city": CITIES,
    "room": ROOMS,
    "lang": LANGS,
    "occasion": OCCASIONS,
    "season": SEASONS,
    "dinner": DINNERS,
    "task": TASKS,
    "area": TOPIC_AREAS,
    "goal": REC_GOALS,
    "breed": BREEDS,
    "petproblem": PET_PROBLEMS,
    "skillgoal": SKILL_GOALS,
    "need": NEEDS,
    "complaint": COMPLAINTS,
    "meeting": MEETINGS,
    "category": CATEGORIES,
    "specialist": ("physio", "osteopath", "sports doctor", "podiatrist", "chiropractor"),
}


# ------------------------------------------------------------------------------ the kinds


@dataclass(frozen=True)
class Kind:
    """One kind of fact: how it is said, how it is asked, and how it can change.

    Slots name a bank (a value used once per chat: an answer), a part (a plain list: may
    repeat) or a cast role (`cast:pet`: a recurring name). `key` identifies an instance
    (unique per chat for the kind), `focus` is the exchange's subject as a noun phrase.
    Question templates that leave the key out name the instance by a description (a person,
    a season, "my dog"); a wording that fits two instances is dropped as ambiguous."""

    name: str
    topic: str
    role: str  # "user" or "assistant" (a recommendation) or "other" (about someone else)
    slots: dict[str, str]
    says: tuple[str, ...]
    asks: dict[str, tuple[str, ...]] = field(default_factory=dict)  # naming the instance
    key: str = ""
    focus: str = ""
    request: tuple[str, ...] = ()  # assistant kinds: what the user asked
    alts: str = ""  # assistant kinds: the bank of the alternatives named beside the pick
    changes: str = ""  # the slot a later statement changes
    updates: tuple[str, ...] = ()
    update_asks: tuple[str, ...] = ()
    when: tuple[str, ...] = ()  # "... in {month}?": the only instance of its month
    when_slot: str = ""
    order: tuple[str, ...] = ()  # "... first, {a} or {b}?": answer the earlier's order_slot
    order_slot: str = ""
    series: str = ""  # the slot grouping instances for multi-session questions
    all_asks: tuple[str, ...] = ()  # every instance (of the series, or of a {period})
    all_slot: str = "v"
    sum_asks: tuple[str, ...] = ()  # a total or a count over every instance: its parts
    sum_slot: str = ""
    compare: tuple[str, ...] = ()  # "... more, {a} or {b}?": answer the larger's order_slot
    compare_slot: str = ""  # the numeric slot compared
    once: bool = False  # a profile fact: one instance per chat (and its updates)
    skip: float = 0.0  # the chance a repeatable kind passes its turn (keeps it plausible)
    mentions: tuple[str, ...] = ()  # later turns naming the key without the answer
    mention_focus: str = ""
    # Questions that name the instance by a description instead of its own name: a person,
    # place, pet or room the user keeps talking about, or the month it was said in
    # ({month}); asked when the wording fits no other instance of the kind.
    described: dict[str, tuple[str, ...]] = field(default_factory=dict)


K = Kind
KINDS: tuple[Kind, ...] = (
    # ----------------------------------------------------------------- travel
    K(
        "trip_pick",
        "travel",
        "assistant",
        {"city": "part:city", "season": "part:season", "v": "hotel"},
        says=(
            "If I had to choose one base, it would be **{v}**: quiet at night, walkable to the "
            "centre, and the rooms at the back look onto a courtyard.",
            "My pick for you is {v}. It costs a little more than the chains but it puts you in "
            "the right neighbourhood and saves you taxis every evening.",
            "I'd put you in {v}: ten minutes on foot from the old town, and the breakfast is "
            "worth getting up for.",
        ),
        asks={
            "v": (
                "Which hotel did you recommend for {city}?",
                "Where did you think we should stay in {city}?",
                "You suggested somewhere to stay for our {season} trip. What was it called?",
                "What accommodation did you push for when I was planning the {season} holiday?",
            )
        },
        described={
            "v": (
                "Which hotel did you recommend when I was planning a trip in {month}?",
                "Where did you tell us to stay, when I asked about a trip in {month}?",
            )
        },
        all_asks=(
            "Which hotels have you recommended to me {period}? All of them.",
            "List every place to stay you suggested for my trips {period}.",
        ),
        key="city",
        focus="our trip to {city}",
        alts="hotel",
        request=(
            "We're finally doing {city} in {season}. Where should we base ourselves? "
            "Mid-range, not a party area.",
            "Planning {city} for {season}: which area and which hotel would you book?",
            "Thinking about {city} around {season}. Where would you stay if it were you?",
        ),
    ),
    K(
        "trip_report",
        "travel",
        "user",
        {"city": "part:city", "v": "hotel", "d": "dish", "p": "price"},
        says=(
            "We got back from {city} on Sunday. {v} was a good call after all, and the thing "
            "we still talk about is the {d}. The whole thing came to {p}, flights included.",
            "{city} was lovely! We ended up at {v}, and I'd fly back just for the {d}. "
            "Damage: {p} all in.",
            "Home from {city}. Slept well at {v}, ate the {d} twice, and spent {p} altogether, "
            "which is fine.",
        ),
        asks={
            "v": (
                "Which hotel did we stay at in {city}?",
                "Where did we end up sleeping on the {city} trip?",
            ),
            "d": (
                "What was the best thing I ate in {city}?",
                "Which dish did I rave about after the {city} holiday?",
            ),
            "p": ("How much did the {city} trip cost us in the end?",),
        },
        key="city",
        focus="the {city} trip",
        described={
            "v": ("Where did we stay on the trip we took in {month}?",),
            "d": ("What was the food highlight of our holiday in {month}?",),
            "p": ("What did the holiday in {month} cost us, all in?",),
        },
        mentions=(
            "Printed the photos from {city} for the hallway.",
            "Still dreaming about {city}, honestly.",
            "{partner} wants to go back to {city} already.",
        ),
        mention_focus="{city} again",
        when=("Which hotel were we staying at when we travelled in {month}?",),
        when_slot="v",
        order=("Which trip came first, {a} or {b}?", "Did we go to {a} before {b}, or after?"),
        order_slot="city",
        all_asks=(
            "Where did we stay on each of our trips {period}?",
            "Which hotels did we actually sleep in on our holidays {period}?",
        ),
        sum_asks=(
            "How much did we spend on holidays {period}, all trips together?",
            "What did our trips {period} cost in total?",
        ),
        sum_slot="p",
        compare=("Which trip cost us more, {a} or {b}?",),
        compare_slot="p",
    ),
    K(
        "flight",
        "travel",
        "user",
        {"city": "part:city", "v": "flight"},
        says=(
            "Booked the flights for {city}: out on {v}.",
            "Our flight to {city} is on {v}, so the packing list has a deadline now.",
            "Tickets done. {city}, leaving {v}, back a week later.",
        ),
        asks={
            "v": (
                "When do we fly out to {city}?",
                "What's the departure for the {city} trip?",
            )
        },
        key="city",
        focus="getting to {city}",
        changes="v",
        updates=(
            "Annoying: the airline moved our {city} flight, it's now {v}.",
            "Flight change for {city}: we now leave on {v}.",
            "Got an email from the airline. The {city} departure is {v} instead.",
        ),
        update_asks=(
            "What is the current departure for our {city} flight?",
            "After the airline's changes, when do we leave for {city}?",
            "When are we flying to {city} now?",
        ),
    ),
    K(
        "other_trip",
        "travel",
        "other",
        {"city": "part:city", "f": "cast:friend", "v": "hotel"},
        says=(
            "{f} just got back from {city} too; loved {v}, apparently.",
            "Funny, {f} was in {city} last month and booked {v}.",
            "{f} says if we go to {city} we should look at {v}, their base last time.",
        ),
        asks={"v": ("Where did {f} stay in {city}?",)},
        described={
            "v": (
                "Which hotel did {f} use on their trip?",
                "Where did {f} stay on the trip they told me about in {month}?",
                "Where did my friend stay when they went to {city}?",
            )
        },
        focus="the {city} trip",
    ),
    # ----------------------------------------------------------------- cooking
    K(
        "restaurant",
        "cooking",
        "user",
        {"v": "restaurant", "d": "dish", "f": "cast:friend"},
        says=(
            "Tried {v} with {f} on Friday, and the {d} was unreal.",
            "New favourite place: {v}. {f} ordered for the table and the {d} stole the show.",
            "{f} dragged me to {v} for lunch. I'm still thinking about the {d}.",
        ),
        asks={
            "d": ("If I go back to {v}, what should I order again?",),
            "v": ("Where did I have that amazing {d}?",),
        },
        key="v",
        focus="eating out",
        when=("Which new restaurant did I try in {month}?",),
        all_asks=(
            "Which new restaurants did I try {period}?",
            "How many new places did I eat at {period}, and which were they?",
        ),
        when_slot="v",
        order=("Which did I try first, {a} or {b}?",),
        order_slot="v",
        described={
            "d": (
                "What dish did I rave about after eating out in {month}?",
                "Which plate did I love at the new place I tried in {month}?",
                "What did I love at the place {f} took me to?",
                "Which plate impressed me most when {f} and I went out to eat?",
            ),
            "v": (
                "Which restaurant did I try in {month}?",
                "Which restaurant did {f} take me to?",
            ),
        },
        mentions=(
            "Thinking of taking {f} back to {v} for a birthday; is it good for groups?",
            "We walked past {v} again last night, packed as usual.",
        ),
        mention_focus="going back to {v}",
    ),
    K(
        "supper_club",
        "cooking",
        "user",
        {"s": "cast:club", "v": "dish"},
        says=(
            "My turn to host {s} last night: I made {v} and there were no leftovers.",
            "Made {v} for {s} this weekend; took all afternoon but worth it.",
            "{s} came round on Saturday. Went with {v}, and it held up.",
        ),
        series="s",
        focus="cooking for {s}",
        all_asks=(
            "What have I cooked when hosting {s}? List every dish.",
            "How many different dishes have I made for {s}, and what were they?",
        ),
        when=("What did I cook for {s} in {month}?",),
        when_slot="v",
    ),
    K(
        "dinner_pick",
        "cooking",
        "assistant",
        {"k": "part:dinner", "v": "dish"},
        says=(
            "For that I'd make **{v}**: most of it can be done the day before and it scales "
            "without fuss.",
            "The one I'd cook is {v}; it looks generous on the table and forgives a late guest.",
        ),
        asks={
            "v": (
                "What main did you suggest for {k}?",
                "Which dish did you propose when I asked about {k}?",
            )
        },
        described={"v": ("What was the recipe you suggested to me in {month}?",)},
        all_asks=("Which dishes did you suggest I cook, across our chats {period}?",),
        key="k",
        focus="{k}",
        alts="dish",
        request=(
            "I need ideas for {k}. One main, ideally. What would you cook?",
            "Help me with {k}? I want one dish that does the heavy lifting.",
        ),
    ),
    K(
        "diet",
        "cooking",
        "user",
        {"v": "diet"},
        says=(
            "Heads up for recipes: I've gone {v} for now.",
            "I'm eating {v} these days, so keep that in mind for meal ideas.",
        ),
        asks={"v": ("What kind of diet am I following?",)},
        once=True,
        focus="what I eat",
        changes="v",
        updates=(
            "Diet update: I've switched from {old} to {v}.",
            "Small change: I'm {v} now rather than {old}.",
        ),
        update_asks=("What is my diet at the moment?", "How am I eating these days?"),
    ),
    K(
        "other_restaurant",
        "cooking",
        "other",
        {"k": "key:restaurant", "f": "cast:friend", "v": "dish"},
        says=(
            "{f} went to {k} last week and swears by the {v}.",
            "{f} says the {v} at {k} is the thing to order.",
        ),
        asks={
            "v": (
                "What does {f} recommend ordering at {k}?",
                "Which dish did {f} say to get at {k}?",
            )
        },
        key="k",
        focus="eating out",
        described={
            "v": ("What did {f} say to order, at the place they told me about in {month}?",)
        },
    ),
    K(
        "friend_meal",
        "cooking",
        "other",
        {"f": "cast:friend", "v": "restaurant", "d": "dish"},
        says=(
            "{f} keeps going on about a place called {v}; apparently the {d} is the reason.",
            "{f} sent me a photo of the {d} at {v}. Jealous.",
        ),
        asks={
            "v": ("Which restaurant does {f} keep talking about?",),
            "d": ("Which dish was {f} showing off about?",),
        },
        focus="eating out",
        described={"v": ("Which restaurant did a friend keep going on about in {month}?",)},
    ),
    # ----------------------------------------------------------------- fitness
    K(
        "race_goal",
        "fitness",
        "user",
        {"v": "race"},
        says=(
            "I signed up for the {v}, so training gets serious now.",
            "Entered the {v}! That's the goal this year.",
        ),
        asks={"v": ("Which event am I training towards?",)},
        once=True,
        focus="my training block",
        changes="v",
        updates=(
            "Change of plan: I dropped out of the {old} and entered the {v} instead.",
            "New goal: the {v}. The old one clashed with a wedding.",
        ),
        update_asks=(
            "What's my goal race now?",
            "Which event am I preparing for these days?",
        ),
    ),
    K(
        "race_result",
        "fitness",
        "user",
        {"k": "race", "v": "racetime"},
        says=(
            "Ran the {k} yesterday and finished in {v}!",
            "Official result from the {k}: {v}. Legs are destroyed.",
            "Done with the {k}. {v} on the clock, and I walked one water station.",
        ),
        asks={
            "v": ("How long did the {k} take me?", "What was my finishing time at the {k}?"),
        },
        key="k",
        focus="race recovery",
        when=("Which race did I run in {month}?",),
        all_asks=(
            "Which races did I run {period}?",
            "How many races did I do {period}, and which ones?",
        ),
        all_slot="k",
        skip=0.5,
        described={
            "v": (
                "What was my finishing time in the race I ran in {month}?",
                "How long did my race in {month} take me?",
                "How fast was I in my {month} race?",
            )
        },
        mentions=(
            "The photos from the {k} finally came out.",
            "Still thinking about the {k}; the last two kilometres were brutal.",
        ),
        mention_focus="the {k}",
        when_slot="k",
        order=("Which race did I do first, the {a} or the {b}?",),
        order_slot="k",
    ),
    K(
        "gym",
        "fitness",
        "user",
        {"v": "gym"},
        says=("Joined {v} near the office, finally.", "I've got a membership at {v} now."),
        asks={"v": ("Where do I go to work out?",)},
        once=True,
        focus="my gym routine",
        changes="v",
        updates=(
            "Cancelled {old}; I'm training at {v} now.",
            "Switched gyms: {v} from this month.",
        ),
        update_asks=("Which gym am I a member of now?", "Where do I train these days?"),
    ),
    K(
        "mileage",
        "fitness",
        "user",
        {"v": "weekly"},
        says=("I'm up to {v} a week of running.", "Running volume is sitting at {v} a week."),
        asks={"v": ("What's my usual training volume?",)},
        once=True,
        focus="my running volume",
        changes="v",
        updates=("Weekly running is {v} now.", "I've changed my volume: {v} a week."),
        update_asks=("What's my current weekly running distance?",),
    ),
    K(
        "exercise_pick",
        "fitness",
        "assistant",
        {"k": "part:area", "v": "exercise"},
        says=(
            "If you add only one thing for {k}, make it **{v}**, three sets twice a week.",
            "The exercise I'd start with for {k} is {v}: easy to load gradually.",
        ),
        asks={
            "v": (
                "What exercise did you tell me to add for {k}?",
                "Which movement did you suggest to help {k}?",
            )
        },
        described={"v": ("Which exercise did you suggest I add in {month}?",)},
        all_asks=("Which exercises did you give me {period}? I want to make a routine of them.",),
        key="k",
        focus="{k}",
        alts="exercise",
        request=(
            "Something is off with {k}. What should I add to my routine?",
            "Any exercises for {k}? I have twenty minutes, three times a week.",
        ),
    ),
    K(
        "other_race",
        "fitness",
        "other",
        {"k": "key:race_result", "s": "cast:sister", "v": "racetime"},
        says=(
            "My sister {s} ran the {k} as well and finished in {v}.",
            "{s} did the {k} too: {v}, under the target.",
        ),
        asks={"v": ("What time did {s} run at the {k}?",)},
        described={"v": ("How fast was my sister in the race she ran in {month}?",)},
        key="k",
        focus="race recovery",
    ),
    K(
        "friend_race",
        "fitness",
        "other",
        {"f": "cast:friend", "k": "race", "v": "racetime"},
        says=(
            "{f} ran the {k} at the weekend, {v}. I'm a bit jealous.",
            "{f} finished the {k} in {v} and won't stop talking about it.",
        ),
        asks={"v": ("What was {f}'s time at the {k}?",)},
        described={
            "v": (
                "How did {f} do in their race?",
                "How fast was my friend in the race in {month}?",
                "What time did {f} do in the race they told me about in {month}?",
            )
        },
        key="k",
        focus="race recovery",
    ),
    # ----------------------------------------------------------------- finance
    K(
        "savings",
        "finance",
        "user",
        {"k": "part:goal", "v": "goal_amount"},
        says=(
            "We're aiming to put {v} into {k} by the end of next year.",
            "The target for {k} is {v}.",
        ),
        asks={"v": ("How much are we trying to save in {k}?",)},
        key="k",
        focus="saving for {k}",
        changes="v",
        updates=("We raised the target for {k} to {v}.", "New number for {k}: {v}."),
        update_asks=(
            "What's the current savings target for {k}?",
            "How much are we aiming for with {k} now?",
        ),
    ),
    K(
        "rent",
        "finance",
        "user",
        {"v": "rent"},
        says=("Our rent is {v} a month, for context.", "We pay {v} every month for the flat."),
        asks={"v": ("What do we pay the landlord?",)},
        once=True,
        focus="our monthly budget",
        changes="v",
        updates=("The landlord put it up to {v}.", "From next month the flat costs us {v}."),
        update_asks=("What do we pay in rent now?", "What's our rent after the latest change?"),
    ),
    K(
        "fund_pick",
        "finance",
        "assistant",
        {"k": "part:goal", "v": "fund"},
        says=(
            "For {k} I would use **{v}**: the money stays reachable and the costs are low.",
            "Given your timeline for {k}, {v} is what I'd pick.",
        ),
        asks={"v": ("What did you suggest I do with {k}?", "Where did you advise me to put {k}?")},
        key="k",
        focus="{k}",
        alts="fund",
        request=(
            "What should I do with {k}? I don't want to overthink it.",
            "Where would you park {k}? We might need it in two or three years.",
        ),
        described={"v": ("What did you tell me to do with the money, when I asked in {month}?",)},
    ),
    K(
        "purchase",
        "finance",
        "user",
        {"c": "part:category", "v": "product", "p": "price"},
        says=(
            "Caved and bought a new {c}, {v}, for {p}.",
            "Ordered {v} last night, {p} with the discount. The old {c} was falling apart.",
            "{v} arrived today, the {c} I was going on about. {p}, which hurt.",
        ),
        asks={
            "p": ("How much did I pay for {v}?",),
        },
        key="c",
        focus="the new {c}",
        when=("What did I splash out on in {month}?",),
        all_asks=("What bigger purchases did I make {period}?",),
        sum_asks=(
            "How much did I spend on bigger purchases {period}, all together?",
            "Add up what the things I bought {period} cost me.",
        ),
        sum_slot="p",
        compare=(
            "Which cost me more, the {a} or the {b}?",
            "Was the {a} or the {b} the pricier buy?",
        ),
        compare_slot="p",
        order_slot="c",
        described={
            "p": (
                "How much was the big purchase I made in {month}?",
                "How much did the new {c} cost me?",
                "What did I spend on the {c} in the end?",
            ),
            "v": ("What did I treat myself to in {month}?", "Which model of {c} did I go for?"),
        },
        mentions=(
            "Still happy with {v}, for the record.",
            "Is an extended warranty worth it for {v}?",
        ),
        mention_focus="looking after {v}",
        when_slot="v",
    ),
    K(
        "budget",
        "finance",
        "user",
        {"v": "budget"},
        says=(
            "We try to keep food shopping to {v} a month.",
            "Groceries: {v} a month is the number we agreed.",
        ),
        asks={"v": ("How much can we spend at the supermarket?",)},
        once=True,
        focus="the food budget",
        changes="v",
        updates=(
            "We moved the grocery budget to {v}.",
            "Food shopping is {v} a month from now on.",
        ),
        update_asks=("What's the grocery budget now?",),
    ),
    K(
        "other_purchase",
        "finance",
        "other",
        {"k": "key:purchase", "f": "cast:friend", "v": "price"},
        says=(
            "{f} bought the same {k} as well, but paid {v}.",
            "{f} got that {k} too, for {v}. Typical.",
        ),
        asks={"v": ("What did {f} pay for their {k}?",)},
        described={"v": ("How much did {f} say they paid, when they told me in {month}?",)},
        key="k",
        focus="a big purchase",
    ),
    # ----------------------------------------------------------------- code
    K(
        "stack",
        "code",
        "user",
        {"v": "framework"},
        says=("At work the main app is on {v}.", "Our backend is {v}, for context."),
        asks={"v": ("What technology is my team's product built with?",)},
        once=True,
        focus="the app at work",
        changes="v",
        updates=(
            "We finished migrating the main app from {old} to {v}.",
            "The backend moved to {v} this quarter.",
        ),
        update_asks=("What framework is my team's app built on now?",),
    ),
    K(
        "outage",
        "code",
        "user",
        {"k": "service", "v": "cause"},
        says=(
            "Found it: {k} fell over because of {v}.",
            "Long night. {k} was down for two hours and it was {v}, of all things.",
            "We finally know what broke {k} on Tuesday: {v}.",
        ),
        asks={
            "v": ("What turned out to be behind the {k} incident?",),
        },
        key="k",
        focus="the incident",
        when=("Which service had an outage in {month}?",),
        all_asks=(
            "Which of our services had an outage {period}?",
            "How many incidents did we have {period}, and on which services?",
        ),
        all_slot="k",
        described={
            "v": (
                "What was behind the outage we had in {month}?",
                "What did the post-mortem in {month} find?",
            )
        },
        mentions=(
            "The {k} alerts fired again this morning, false alarm this time.",
            "We're adding better monitoring to {k} after last time.",
        ),
        mention_focus="monitoring {k}",
        when_slot="k",
        order=("Which went down first, {a} or {b}?",),
        order_slot="k",
    ),
    K(
        "lib_pick",
        "code",
        "assistant",
        {"k": "part:task", "v": "library"},
        says=(
            "For {k} I'd reach for **{v}**; it is small, typed and well maintained.",
            "Use {v} for {k}. It saves you writing the edge cases yourself.",
        ),
        asks={
            "v": (
                "Which library did you recommend for {k}?",
                "What package did you suggest I use for {k}?",
            )
        },
        described={"v": ("What was that Python library you recommended in {month}?",)},
        all_asks=("Which Python libraries did you recommend to me {period}?",),
        key="k",
        focus="{k}",
        alts="library",
        request=(
            "What's the sane way to handle {k} in Python? A library is fine.",
            "I keep hand-rolling {k}. What would you use?",
        ),
    ),
    K(
        "launch",
        "code",
        "user",
        {"k": "cast:project", "v": "day"},
        says=("{k} is scheduled to go live on {v}.", "Launch date for {k}: {v}."),
        asks={"v": ("When is {k} going live?",)},
        key="k",
        focus="the {k} launch",
        changes="v",
        updates=("{k} slipped again, the new launch date is {v}.", "Leadership moved {k} to {v}."),
        update_asks=(
            "What is the launch date for {k} now?",
            "When will {k} ship, as things stand?",
        ),
    ),
    # ----------------------------------------------------------------- work
    K(
        "manager",
        "work",
        "user",
        {"v": "person"},
        says=("My manager is {v}, since the reorg.", "I report to {v} now."),
        asks={"v": ("Who is my boss?",)},
        once=True,
        focus="things at work",
        changes="v",
        updates=(
            "Big news at work: {v} took over the team.",
            "Reorg again. I'm under {v} now.",
        ),
        update_asks=("Who do I report to at the moment?", "Who's my boss now?"),
    ),
    K(
        "title",
        "work",
        "user",
        {"v": "title"},
        says=("My title is {v}, if that helps.", "I work as a {v}."),
        asks={"v": ("What do I do for a living?",)},
        once=True,
        focus="my career",
        changes="v",
        updates=("Promotion came through: I'm {v} now!", "New role: {v}."),
        update_asks=("What is my current role at work?", "What's my job title these days?"),
    ),
    K(
        "standup",
        "work",
        "user",
        {"v": "standup"},
        says=(
            "Daily standup is at {v}, which eats my mornings.",
            "Our standup starts at {v} every day.",
        ),
        asks={"v": ("When does my team get together every morning?",)},
        once=True,
        focus="my mornings",
        changes="v",
        updates=("Standup moved to {v}.", "They shifted the daily standup to {v}."),
        update_asks=("What time is the morning team check-in these days?",),
    ),
    K(
        "decision",
        "work",
        "user",
        {"k": "cast:project", "v": "decision"},
        says=(
            "We finally agreed on {k}: {v}.",
            "Long afternoon on {k}. In the end: {v}.",
        ),
        asks={
            "v": (
                "What's the plan for {k} after the last meeting?",
                "What did we decide about {k}?",
            )
        },
        key="k",
        focus="the {k} plan",
        described={"v": ("What did we decide in the project review in {month}?",)},
    ),
    K(
        "opener_pick",
        "work",
        "assistant",
        {"k": "part:meeting", "v": "opener"},
        says=(
            "Open {k} with **{v}**; it sets the frame before anyone else does.",
            "I would start {k} with {v}.",
        ),
        asks={
            "v": ("How did you suggest I open {k}?", "What did you say I should start {k} with?")
        },
        key="k",
        focus="{k}",
        alts="opener",
        request=(
            "I have {k} coming up and I always ramble. How should I open?",
            "Help me prepare the first two minutes of {k}?",
        ),
        described={"v": ("How did you suggest I open the meeting I was preparing in {month}?",)},
    ),
    K(
        "colleague_move",
        "work",
        "other",
        {"c": "cast:coworker", "v": "part:city"},
        says=("{c} is relocating to our {v} office.", "{c} told me they're moving to {v}."),
        asks={"v": ("Which city is {c} heading to?",)},
        key="c",
        focus="the team",
        described={"v": ("Where is the colleague who told me in {month} they were moving going?",)},
    ),
    K(
        "sister_boss",
        "work",
        "other",
        {"s": "cast:sister", "v": "person"},
        says=("My sister {s} has a new manager too, {v}.", "{s}'s new boss is {v}, apparently."),
        asks={"v": ("Who does {s} answer to at work now?",)},
        once=True,
        focus="family news",
    ),
    # ----------------------------------------------------------------- pets
    K(
        "vet",
        "pets",
        "user",
        {"p": "cast:pet", "v": "clinic"},
        says=("{p} is registered at {v}.", "We take {p} to {v} for everything."),
        asks={"v": ("Which vet practice do we use for {p}?", "Where is my {pk} registered?")},
        once=True,
        focus="{p}",
        changes="v",
        updates=("We moved {p} to {v}.", "Changed practices for {p}: {v} from now on."),
        update_asks=("Which clinic looks after {p} now?", "Who is my {pk}'s vet these days?"),
    ),
    K(
        "vet_visit",
        "pets",
        "user",
        {"p": "cast:pet", "v": "finding"},
        says=(
            "{p} had a checkup today: the vet found {v}.",
            "Took {p} in this morning. Turns out it's {v}, poor thing.",
            "Back from the clinic with {p}: {v}, apparently. Nothing dramatic.",
        ),
        asks={"v": ("What health problem turned up for {p} at the vet?",)},
        series="p",
        focus="{p}'s health",
        described={
            "v": (
                "What did the vet find when I took {p} in, in {month}?",
                "What did the vet find when I took my {pk} in?",
                "Is anything wrong with my {pk}, according to the last checkup?",
            )
        },
        when=("What was wrong with my {pk} in {month}?",),
        when_slot="v",
        all_asks=(
            "What has the vet found with {p} so far? Every visit, please.",
            "How many times has {p} been to the vet, and what for?",
        ),
        order=("Which came first for {p}, {a} or {b}?",),
        order_slot="v",
    ),
    K(
        "pet_food",
        "pets",
        "user",
        {"p": "cast:pet", "v": "product"},
        says=("{p} eats {v} now.", "We put {p} on {v}."),
        asks={"v": ("What food is {p} on?", "What does my {pk} eat?")},
        once=True,
        focus="feeding {p}",
        changes="v",
        updates=("{p} went off it, so we switched to {v}.", "{p}'s bowl has {v} in it now."),
        update_asks=("What do we feed {p} at the moment?", "What is my {pk} eating now?"),
    ),
    K(
        "friend_dog",
        "pets",
        "other",
        {"f": "cast:friend", "b": "part:breed", "v": "petname"},
        says=(
            "{f} adopted a {b} and called it {v}.",
            "Met {f}'s new {b} at the weekend. {v}, tiny, chewed my shoelaces.",
        ),
        asks={"v": ("What did {f} name the new puppy?", "What's {f}'s dog called?")},
        key="f",
        focus="dogs",
        described={"v": ("What did my friend call the puppy they got in {month}?",)},
    ),
    K(
        "friend_vet",
        "pets",
        "other",
        {"f": "cast:friend", "b": "part:breed", "v": "finding"},
        says=(
            "{f}'s {b} had to go to the vet as well: {v}.",
            "Poor {f}, their {b} has {v}. They were up all night.",
        ),
        asks={"v": ("What's wrong with {f}'s {b}?",)},
        described={
            "v": (
                "What did the vet find with {f}'s dog?",
                "What was wrong with my friend's dog, the one that went to the vet in {month}?",
            )
        },
        focus="dogs",
    ),
    K(
        "pet_pick",
        "pets",
        "assistant",
        {"p": "cast:pet", "k": "part:petproblem", "v": "petrec"},
        says=(
            "For {p} I would try **{v}** first: it tires the brain, not just the legs.",
            "Get {p} {v}; ten minutes of that is worth a long walk.",
        ),
        asks={
            "v": (
                "What did you suggest for {p} when the problem was {k}?",
                "What was your idea for my {pk} and the {k}?",
            )
        },
        all_asks=("What have you suggested for {p} over the months? All of it.",),
        series="p",
        key="k",
        focus="{p}",
        alts="petrec",
        request=("{p} has a {k} problem. Ideas?", "How do I deal with {p}'s {k}?"),
        described={"v": ("What did you suggest for my {pk}, back in {month}?",)},
    ),
    # ----------------------------------------------------------------- health
    K(
        "gp",
        "health",
        "user",
        {"v": "practice"},
        says=("I'm registered with {v}.", "My doctor's surgery is {v}."),
        asks={"v": ("Where do I go when I need to see a doctor?",)},
        once=True,
        focus="my doctor",
        changes="v",
        updates=("Changed surgeries: I'm with {v} now.", "Registered with {v} since the move."),
        update_asks=("Which practice am I with now?", "Who's my GP these days?"),
    ),
    K(
        "blood",
        "health",
        "user",
        {"v": "blood"},
        says=("Blood test results are back: {v}.", "The bloods showed {v}, which explains a lot."),
        asks={"v": ("What did my recent lab results say?",)},
        once=True,
        focus="my energy levels",
    ),
    K(
        "dose",
        "health",
        "user",
        {"v": "dose"},
        says=("The doctor has me on {v}.", "I'm taking {v}."),
        asks={"v": ("What supplement dose am I on?",)},
        once=True,
        focus="supplements",
        changes="v",
        updates=("Dose changed: {v} now.", "After the retest the doctor moved me to {v}."),
        update_asks=("What is my vitamin D dose now?", "How much vitamin D am I taking now?"),
    ),
    K(
        "dentist",
        "health",
        "user",
        {"v": "slot"},
        says=("Dentist appointment booked for {v}.", "I see the dentist on {v}."),
        asks={"v": ("When do I have to get my teeth checked?",)},
        once=True,
        focus="the dentist",
        changes="v",
        updates=("The dentist moved me to {v}.", "Dentist rescheduled: {v}."),
        update_asks=("When is my teeth check now, after the changes?",),
    ),
    K(
        "specialist",
        "health",
        "user",
        {"k": "part:area", "t": "part:specialist", "v": "person"},
        says=(
            "Saw a {t} about {k} today, {v}. She thinks it's mostly posture.",
            "First session with {v}, the {t}, for {k}. Homework already.",
            "Finally got an appointment for {k}: a {t} called {v}.",
        ),
        asks={"v": ("What's the name of the {t} I went to?",)},
        described={
            "v": (
                "Who did I see about {k}?",
                "Who did I see about my aches and pains in {month}?",
            )
        },
        key="k",
        focus="{k}",
        all_asks=(
            "Which health professionals did I see {period}?",
            "Who have I seen about aches and pains {period}? Names, please.",
        ),
        when=("Who did I see about a health problem in {month}?",),
        when_slot="v",
    ),
    K(
        "habit_pick",
        "health",
        "assistant",
        {"k": "part:complaint", "v": "habit"},
        says=(
            "For {k}, the habit I'd start with is **{v}**.",
            "Try {v} for two weeks; it is the simplest lever on {k}.",
        ),
        asks={
            "v": (
                "What habit did you suggest for {k}?",
                "Which routine change did you propose for {k}?",
            )
        },
        all_asks=("Which habits have you suggested to me {period}?",),
        key="k",
        focus="{k}",
        alts="habit",
        request=(
            "I've been struggling with {k}. One change you'd make?",
            "Any single habit that helps with {k}?",
        ),
        described={"v": ("Which habit did you suggest when I asked for one in {month}?",)},
    ),
    # ----------------------------------------------------------------- home
    K(
        "repair",
        "home",
        "user",
        {"k": "part:room", "v": "person", "p": "price"},
        says=(
            "{v} sorted out the leak in the {k}; {p} all in.",
            "Someone came for the {k} leak, {v}, and it came to {p}.",
            "The {k} is dry again. {v} did it in an afternoon and charged {p}.",
        ),
        described={
            "v": (
                "What was the name of the plumber we had round in {month}?",
                "Who came to deal with the water problem in the {k}?",
            ),
            "p": (
                "How much did the plumber charge us in {month}?",
                "What did the {k} repair cost us?",
            ),
        },
        key="k",
        focus="the {k}",
        order_slot="k",
        sum_asks=(
            "How much have we spent on repairs {period}, in total?",
            "Add up what the tradespeople cost us {period}.",
        ),
        sum_slot="p",
        compare=("Which repair cost more, the {a} or the {b}?",),
        compare_slot="p",
    ),
    K(
        "paint",
        "home",
        "user",
        {"k": "part:room", "v": "colour"},
        says=("We're painting the {k} in {v}.", "Paint for the {k} is chosen: {v}."),
        asks={"v": ("What shade did we choose for the {k} walls?",)},
        key="k",
        focus="redecorating the {k}",
        changes="v",
        updates=(
            "Changed our minds on the {k}: it's going to be {v}.",
            "New plan for the {k}: {v}.",
        ),
        update_asks=("Which paint colour did we settle on for the {k}?",),
    ),
    K(
        "internet",
        "home",
        "user",
        {"v": "provider"},
        says=("Our broadband is with {v}.", "We're on {v} for internet."),
        asks={"v": ("Who is our internet provider?",)},
        once=True,
        focus="the wifi",
        changes="v",
        updates=("Switched broadband to {v}.", "We left {old} for {v}."),
        update_asks=("Which broadband provider are we with now?",),
    ),
    K(
        "home_pick",
        "home",
        "assistant",
        {"k": "part:room", "v": "homerec"},
        says=(
            "For the {k} I'd get **{v}**; it fixes the problem rather than hiding it.",
            "In the {k}, {v} would pay for itself.",
        ),
        asks={"v": ("What did you say we should buy for the {k}?",)},
        all_asks=("What have you told us to buy for the flat {period}?",),
        key="k",
        focus="the {k}",
        alts="homerec",
        request=(
            "The {k} is always damp and cold. What would you buy?",
            "What one thing would make the {k} more bearable in winter?",
        ),
        described={"v": ("What did you say we should buy for the flat, in {month}?",)},
    ),
    # ----------------------------------------------------------------- garden
    K(
        "planted",
        "garden",
        "user",
        {"s": "cast:bed", "v": "plant"},
        says=(
            "Put {v} in {s} this weekend.",
            "Got {v} into {s} at last.",
            "{s} has {v} in it now.",
        ),
        series="s",
        focus="{s}",
        all_asks=(
            "What have I planted in {s}?",
            "How many different things have I put in {s}, and what are they?",
        ),
        when=("What did I plant in {s} in {month}?",),
        when_slot="v",
    ),
    K(
        "plant_pick",
        "garden",
        "assistant",
        {"s": "cast:bed", "v": "plant"},
        says=(
            "For {s} I would plant **{v}**: it copes with the shade and the wind.",
            "{v} would do well in {s}.",
        ),
        asks={"v": ("What did you suggest growing in {s}?",)},
        key="s",
        focus="{s}",
        alts="plant",
        request=(
            "What would actually grow in {s}? It gets about three hours of sun.",
            "Give me one plant for {s} that I can't kill.",
        ),
        described={"v": ("What plant did you suggest when I asked in {month}?",)},
    ),
    # ----------------------------------------------------------------- reading
    K(
        "book_club",
        "reading",
        "user",
        {"s": "cast:bookclub", "v": "book"},
        says=("{s} picked {v} for this month.", "{s} chose {v} this time round."),
        series="s",
        focus="{s}",
        all_asks=("Which books has {s} read?", "What titles has {s} chosen so far?"),
        when=("Which book did {s} read in {month}?",),
        when_slot="v",
    ),
    K(
        "finished",
        "reading",
        "user",
        {"v": "book", "a": "person"},
        says=(
            "Just finished {v} by {a}. Loved it.",
            "Finished {v}, the {a} novel.",
            "Stayed up until one to get to the end of {v}. {a} can really write.",
        ),
        asks={
            "a": ("Who wrote {v}?",),
        },
        key="v",
        focus="what I'm reading",
        when=("What book did I finish in {month}?",),
        all_asks=(
            "Which books did I finish {period}?",
            "How many books did I get through {period}, and which?",
        ),
        described={
            "a": ("Who was the author of the book I finished in {month}?",),
            "v": ("What novel did I finish in {month}?",),
        },
        mentions=("Lent my copy of {v} to a friend.", "Still thinking about the ending of {v}."),
        mention_focus="books like {v}",
        when_slot="v",
        order=("Which did I finish first, {a} or {b}?",),
        order_slot="v",
    ),
    K(
        "concert",
        "reading",
        "user",
        {"v": "band", "p": "venue"},
        says=("Saw {v} at {p} last night!", "{v} played {p}; what a gig."),
        asks={"p": ("Where did I see {v} play?",)},
        key="v",
        focus="live music",
        when=("Which band did I see live in {month}?",),
        when_slot="v",
        all_asks=("Which bands have I seen live {period}?",),
        described={
            "p": ("Where was the gig I went to in {month}?",),
            "v": ("Who did I see live in {month}?",),
        },
        mentions=(
            "{v} announced another tour; should I go again?",
            "Can't stop listening to {v} since that gig.",
        ),
        mention_focus="{v}'s music",
        order=("Which gig came first, {a} or {b}?",),
        order_slot="v",
    ),
    K(
        "book_pick",
        "reading",
        "assistant",
        {"k": "part:city", "v": "book"},
        says=(
            "Before {k}, read **{v}**; it makes the streets make sense.",
            "For the {k} trip, take {v}.",
        ),
        asks={"v": ("What book did you recommend before my {k} trip?",)},
        all_asks=("Which novels have you recommended to me {period}?",),
        key="k",
        focus="reading about {k}",
        alts="book",
        request=(
            "Any novel set in {k} to read before going?",
            "What should I read on the plane to {k}?",
        ),
        described={"v": ("Which novel did you recommend to me in {month}?",)},
    ),
    K(
        "other_book",
        "reading",
        "other",
        {"k": "key:finished", "f": "cast:friend", "v": "rating"},
        says=("{f} read {k} too and gave it {v}.", "{f}'s verdict on {k}: {v}."),
        asks={"v": ("What rating did {f} give {k}?",)},
        key="k",
        focus="what I'm reading",
        described={"v": ("What did my friend think of {k}, out of ten?",)},
    ),
    # ----------------------------------------------------------------- family
    K(
        "kid_activity",
        "family",
        "user",
        {"k": "cast:kid", "v": "activity"},
        says=("{k} started {v} on Thursdays.", "{k} is doing {v} after school now."),
        asks={"v": ("What after-school activity does {k} do?",)},
        once=True,
        focus="{k}'s week",
        changes="v",
        updates=("{k} quit and switched to {v}.", "{k} has moved on to {v}."),
        update_asks=("What activity is {k} doing now?",),
    ),
    K(
        "gift",
        "family",
        "user",
        {"s": "cast:giftee", "o": "part:occasion", "v": "gift"},
        says=(
            "Sorted {s}'s {o} present: {v}.",
            "{s}'s {o} is covered: {v}, wrapped and hidden in the wardrobe.",
        ),
        series="s",
        focus="presents for {s}",
        all_asks=(
            "What presents have I bought {s}? All of them, please.",
            "Which gifts have I given {s} over time?",
        ),
        when=("What did I get {s} in {month}?",),
        when_slot="v",
    ),
    K(
        "friend_job",
        "family",
        "other",
        {"f": "cast:friend", "v": "company"},
        says=("{f} got a job at {v}!", "{f} starts at {v} next month."),
        asks={"v": ("Where does {f} work now?",)},
        key="f",
        focus="friends' news",
        changes="v",
        updates=("{f} already left {old} and joined {v}.", "{f} switched jobs again, to {v}."),
        update_asks=("Which company is {f} at now?", "Where is {f} working these days?"),
        all_asks=("Which of my friends changed jobs {period}?",),
        all_slot="f",
        described={"v": ("Which company did my friend join, the one who told me in {month}?",)},
    ),
    K(
        "partner_dinner",
        "family",
        "user",
        {"p": "cast:partner", "v": "restaurant"},
        says=("{p}'s birthday dinner is booked at {v}.", "Booked {v} for {p}'s birthday."),
        asks={"v": ("Where are we celebrating {p}'s birthday?",)},
        once=True,
        focus="{p}'s birthday",
        changes="v",
        updates=("Had to move {p}'s birthday dinner to {v}.", "New venue for {p}'s dinner: {v}."),
        update_asks=("Which restaurant is {p}'s birthday dinner at now?",),
    ),
    K(
        "gift_pick",
        "family",
        "assistant",
        {"s": "cast:giftee", "k": "part:occasion", "v": "gift"},
        says=(
            "For {s}'s {k}, I'd go with **{v}**: personal without being a gamble.",
            "My suggestion for {s}: {v}.",
        ),
        asks={"v": ("What present did you suggest for {s}'s {k}?",)},
        all_asks=("What gift ideas have you given me for {s}? All of them.",),
        series="s",
        key="k",
        focus="{s}'s {k}",
        alts="gift",
        request=("{s}'s {k} is coming up. Gift ideas?", "What should I get {s} for the {k}?"),
        described={"v": ("What present did you suggest for {s}, in {month}?",)},
    ),
    # ----------------------------------------------------------------- learning
    K(
        "tutor",
        "learning",
        "user",
        {"l": "part:lang", "v": "person"},
        says=(
            "I've started {l} lessons with a tutor called {v}.",
            "My {l} tutor is {v}; we meet online.",
        ),
        asks={"v": ("Who teaches me {l}?",)},
        once=True,
        focus="learning {l}",
        changes="v",
        updates=("New {l} tutor: {v}.", "I switched tutors, I'm with {v} now."),
        update_asks=("Who is my tutor now?", "Who teaches me {l} these days?"),
    ),
    K(
        "exam",
        "learning",
        "user",
        {"l": "part:lang", "k": "level", "v": "score"},
        says=("{l} {k} result is in: {v}!", "Passed {l} {k}, {v}. Celebrating with cake."),
        asks={"v": ("How did I do on the {l} {k} test?",)},
        described={
            "v": (
                "What score did I get in my {l} exam?",
                "How did the language exam I sat in {month} go?",
            )
        },
        key="k",
        focus="the {l} exam",
        order_slot="l",
        compare=(
            "Did I score higher in my {a} exam or my {b} one?",
            "Which exam went better, {a} or {b}?",
        ),
        compare_slot="v",
    ),
    K(
        "course_pick",
        "learning",
        "assistant",
        {"k": "part:skillgoal", "v": "course"},
        says=(
            "Take **{v}**; it is short and the exercises are real.",
            "I'd do {v}, an hour a week is enough.",
        ),
        asks={"v": ("Which course did you point me to for {k}?",)},
        all_asks=("Which courses did you suggest to me {period}?",),
        key="k",
        focus="{k}",
        alts="course",
        request=(
            "I want a course for {k} this winter. One suggestion?",
            "Suggest an evening course for {k}?",
        ),
        described={"v": ("Which course did you point me to in {month}?",)},
    ),
    # ----------------------------------------------------------------- gadgets
    K(
        "phone",
        "gadgets",
        "user",
        {"v": "phone"},
        says=("I'm on a {v} these days.", "Got a {v}, finally."),
        asks={"v": ("What phone do I use?",)},
        once=True,
        focus="my phone",
        changes="v",
        updates=("Replaced the {old} with a {v}.", "New phone: a {v}."),
        update_asks=("Which phone do I have now?",),
    ),
    K(
        "gadget_pick",
        "gadgets",
        "assistant",
        {"k": "part:need", "v": "product"},
        says=(
            "For {k}, get **{v}**: it does the one job well and the battery lasts.",
            "I'd buy {v} for {k}; skip the pricier model.",
        ),
        asks={
            "v": (
                "Which model did you recommend for {k}?",
                "What did you tell me to buy when I needed {k}?",
            )
        },
        described={"v": ("Which gadget did you recommend to me in {month}?",)},
        all_asks=("Which gadgets did you recommend to me {period}?",),
        key="k",
        focus="{k}",
        alts="product",
        request=("I need {k}. What would you buy?", "Shopping for {k}: your pick?"),
    ),
    K(
        "car",
        "gadgets",
        "user",
        {"v": "car"},
        says=("We drive a {v}.", "Our car is a {v}."),
        asks={"v": ("What car do we have?",)},
        once=True,
        focus="the car",
        changes="v",
        updates=("We traded in the {old} for a {v}.", "New car: a {v}."),
        update_asks=("What do we drive now?",),
    ),
)


@dataclass(frozen=True)
class Link:
    """Two facts about the same subject (a city, a giftee, a room) asked about together: the
    question needs both turns. Templates see the first fact's slots as {a_x}, the second's
    as {b_x}; `answers` name (0 or 1, slot) pairs."""

    first: str  # a kind's name
    second: str
    on: tuple[tuple[str, str], ...]  # (first's slot, second's slot) that must be equal
    asks: tuple[str, ...]
    answers: tuple[tuple[int, str], ...]
    after: bool = False  # the second must come later (what happened after the advice)


LINKS = (
    Link(
        "trip_pick",
        "book_pick",
        (("city", "k"),),
        ("For {a_city}, which hotel and which book did you recommend?",),
        ((0, "v"), (1, "v")),
    ),
    Link(
        "tutor",
        "exam",
        (("l", "l"),),
        ("Who was teaching me {a_l}, and how did my {a_l} {b_k} exam go?",),
        ((0, "v"), (1, "v")),
    ),
    Link(
        "savings",
        "fund_pick",
        (("k", "k"),),
        ("How much are we saving in {a_k}, and where did you suggest we keep it?",),
        ((0, "v"), (1, "v")),
    ),
    Link(
        "trip_pick",
        "trip_report",
        (("city", "city"),),
        (
            "Which hotel did you recommend for {a_city}, and where did we actually end up staying?",
            "Did we stay at the place you suggested for {a_city}? Remind me of both names.",
        ),
        ((0, "v"), (1, "v")),
        after=True,
    ),
    Link(
        "gift_pick",
        "gift",
        (("s", "s"), ("k", "o")),
        ("What did you suggest I get {a_s} for the {a_k}, and what did I end up buying?",),
        ((0, "v"), (1, "v")),
        after=True,
    ),
    Link(
        "exercise_pick",
        "specialist",
        (("k", "k"),),
        ("Who did I see about {a_k}, and which exercise did you give me for it?",),
        ((1, "v"), (0, "v")),
    ),
    Link(
        "home_pick",
        "repair",
        (("k", "k"),),
        ("Who fixed the leak in the {a_k}, and what did you say we should buy for that room?",),
        ((1, "v"), (0, "v")),
    ),
    Link(
        "restaurant",
        "other_restaurant",
        (("v", "k"),),
        ("What did I love at {a_v}, and what does {b_f} swear by there?",),
        ((0, "d"), (1, "v")),
    ),
    Link(
        "race_result",
        "other_race",
        (("k", "k"),),
        (
            "What were my time and my sister's at the {a_k}?",
            "Who was faster at the {a_k}, me or {b_s}? Give me both times.",
        ),
        ((0, "v"), (1, "v")),
    ),
    Link(
        "purchase",
        "other_purchase",
        (("c", "k"),),
        ("What did {b_f} and I each pay for the same {a_c}?",),
        ((0, "p"), (1, "v")),
    ),
    Link(
        "finished",
        "other_book",
        (("v", "k"),),
        ("Who wrote {a_v}, and what did {b_f} rate it?",),
        ((0, "a"), (1, "v")),
    ),
    Link(
        "trip_report",
        "other_trip",
        (("city", "city"),),
        ("Where did {b_f} stay in {a_city}, and where did we?",),
        ((1, "v"), (0, "v")),
    ),
)


# ---------------------------------------------------------------------------- the topics


@dataclass(frozen=True)
class Topic:
    """What an assistant answer on a topic is made of, and what the user asks about it."""

    heads: tuple[str, ...]
    lines: tuple[str, ...]  # {k}: the exchange's focus
    requests: tuple[str, ...]


T = Topic
TOPICS: dict[str, Topic] = {
    "travel": T(
        heads=(
            "Where to stay",
            "Getting around",
            "Neighbourhoods",
            "A day-by-day outline",
            "Booking and timing",
            "Food to seek out",
            "Packing",
            "Money and tickets",
            "What I'd skip",
            "If it rains",
        ),
        lines=(
            "For {k}, the hotel you choose matters more than any single sight, because it "
            "decides how far every evening walk home is.",
            "Stay near a tram or metro stop rather than in the most photogenic street; you "
            "will thank yourself on the second night.",
            "Book the first night somewhere flexible, then move if the neighbourhood does not "
            "suit you; most places allow free cancellation up to two days before.",
            "Old town hotels look charming in photos but are often noisy until late, so ask "
            "for a room at the back or on a high floor.",
            "A guesthouse with a good breakfast can save you a meal a day and an hour of "
            "searching for coffee.",
            "Keep the first day light: a long walk, an early dinner and a proper night's "
            "sleep make the rest of {k} far better.",
            "Buy a transport pass only if you will take more than three rides a day; "
            "otherwise contactless fares are usually cheaper.",
            "Markets are busiest on Saturday mornings, which is the best time for food and "
            "the worst time for photos.",
            "Leave one afternoon unplanned; on most trips that is the part people remember.",
            "Check the opening days of museums before you fix the plan, since many close on "
            "Mondays or Tuesdays.",
            "For dinner, book the one place you care about and improvise the rest.",
            "Pack a light rain layer even in summer; coastal weather turns quickly.",
            "A day trip by train is worth it if the ride is under ninety minutes each way.",
            "Neighbourhoods a little outside the centre usually have better food and quieter "
            "nights for less money.",
            "If you arrive late, choose a hotel within a short taxi ride of the station "
            "rather than saving money on a place that is hard to reach.",
            "Carry a little cash for small bakeries and markets, even where cards are common.",
            "Download offline maps before you fly; airport wifi is never there when needed.",
            "Walking tours in the first morning give you a map in your head for the rest of {k}.",
            "Sunset viewpoints are crowded; go an hour earlier and eat afterwards.",
            "When comparing hotels for {k}, look at the most recent reviews about noise and "
            "heating, not the overall score.",
            "Travel insurance that covers cancellations is cheap compared with a lost "
            "non-refundable booking.",
            "Most old centres are best on foot, so comfortable shoes matter more than an "
            "extra outfit.",
        ),
        requests=(
            "Any tips for {k}? We like long walks and good food.",
            "Can you sketch a rough plan for {k}? Three or four days.",
            "What would you not miss on {k}?",
            "How should we get around during {k} without a car?",
            "Help me pack for {k}; I always take too much.",
        ),
    ),
    "cooking": T(
        heads=(
            "The plan",
            "Shopping list",
            "Make ahead",
            "On the day",
            "Seasoning",
            "Swaps",
            "Timing",
            "To serve",
            "Leftovers",
            "Common mistakes",
        ),
        lines=(
            "For {k}, decide the one dish that carries the meal and keep everything around it "
            "simple.",
            "Salt early and taste late: most home cooking is under-seasoned at the start and "
            "over-corrected at the end.",
            "A sharp element, such as pickles, citrus or a spoon of vinegar, lifts a rich "
            "dish more than extra salt.",
            "Braises and stews are better the next day, which makes them ideal when you want "
            "to sit with your guests.",
            "Roast vegetables in a hot oven on a tray that is not crowded, or they steam "
            "instead of browning.",
            "Toast spices in a dry pan for a minute before grinding; the difference is large.",
            "Write a timing list backwards from when you want to eat, and give yourself a "
            "twenty-minute buffer.",
            "Good bread and good butter cover for almost any kitchen accident.",
            "If a guest has an allergy, cook the whole meal around it instead of making a "
            "separate plate.",
            "Rest meat for as long as it cooked for up to a quarter of an hour; carving too "
            "early loses the juices.",
            "A simple green salad with a mustard dressing balances a heavy main.",
            "Freeze stock in small tubs so it is there when a risotto or soup needs it.",
            "Menus for {k} work best with one hot dish, one cold dish and a dessert that "
            "waits in the fridge.",
            "Use a thermometer for meat and bread; it ends arguments about whether it is done.",
            "Desserts that set overnight, such as a panna cotta or a cheesecake, free the oven.",
            "Buy herbs the day you cook and keep them in a glass of water like flowers.",
            "Double the sauce and freeze half; it is the slowest part to make.",
            "Taste the dish cold before serving if it will be eaten at room temperature; cold "
            "food needs more seasoning.",
            "A restaurant dish is easier to recreate if you note the textures, not just the "
            "flavours.",
            "When trying a new restaurant, order what the kitchen is known for rather than "
            "the safest thing on the menu.",
        ),
        requests=(
            "Can you help me plan {k}?",
            "I'm stuck on ideas for {k}. Anything seasonal?",
            "How do I stop overcooking everything when I'm doing {k}?",
            "Quick question about {k}: what can I make the day before?",
        ),
    ),
    "fitness": T(
        heads=(
            "This week",
            "Easy days",
            "Hard sessions",
            "Strength work",
            "Recovery",
            "Fuelling",
            "Warning signs",
            "Progression",
            "Race week",
            "Mobility",
        ),
        lines=(
            "For {k}, consistency beats intensity: three steady weeks are worth more than one "
            "heroic one.",
            "Keep most runs at a pace where you could hold a conversation; the hard sessions "
            "work because the easy ones are easy.",
            "Add no more than about ten percent to your weekly volume, and take a lighter "
            "week every third or fourth.",
            "Two short strength sessions a week protect the knees and hips more than any shoe.",
            "Sleep is the training session most people skip.",
            "If a pain changes how you move, stop and rest it rather than running through it.",
            "Eat something with carbohydrate and protein within an hour of a long session.",
            "A race-pace session once a week teaches the body what the goal feels like.",
            "Taper for ten to fourteen days before a marathon and about a week before a half.",
            "Warm up for ten minutes before intervals, then build into the first rep.",
            "Log how you feel, not just the distance; patterns show up after a month.",
            "Hills are strength work in disguise and kinder to the legs than speed on the flat.",
            "Stretching after a run feels good but mobility work on rest days does more.",
            "If your gym is busy at peak times, a fixed early slot removes the daily "
            "negotiation with yourself.",
            "Replace running shoes every six to eight hundred kilometres, or sooner if they "
            "feel flat.",
            "For {k}, plan the week around the two key sessions and let the others flex.",
            "Hydrate to thirst on short runs and practise your race drinks on long ones.",
            "Deload weeks are part of the plan, not a failure of it.",
            "Strength exercises should be slow on the way down; that is where tendons adapt.",
            "A training partner is the most reliable motivation there is.",
        ),
        requests=(
            "Can you look at {k} and tell me what to change?",
            "How should the next month look for {k}?",
            "I'm tired all the time with {k}. Too much?",
            "What would a sensible week look like for {k}?",
        ),
    ),
    "finance": T(
        heads=(
            "The short version",
            "Emergency fund first",
            "Where the money goes",
            "Fees matter",
            "Tax wrappers",
            "Automate it",
            "Risk",
            "A simple split",
            "What to avoid",
            "Next steps",
        ),
        lines=(
            "For {k}, start by writing down the date you need the money; the timeline decides "
            "almost everything else.",
            "Money you need within two years belongs in cash or near-cash, not in shares.",
            "Keep three to six months of essential spending in an easy-access account before "
            "investing anything.",
            "A fee difference of one percent a year compounds into a large sum over two decades.",
            "Automate the transfer on payday so saving happens before spending.",
            "Index funds beat most active funds after fees over long periods.",
            "Pay off expensive debt before you invest; a credit card at twenty percent is a "
            "guaranteed loss.",
            "Use the tax-free allowances first; they are the cheapest return you will get.",
            "Rebalance once a year rather than reacting to the news.",
            "A budget works when it is boring: fixed costs, a savings line and a small amount "
            "for fun.",
            "Track rent, groceries and transport first; they are where most of the money goes.",
            "Do not chase last year's best-performing fund; it rarely repeats.",
            "For {k}, a separate account with its own name makes the goal feel real.",
            "Check the interest rate on savings every few months; banks quietly cut them.",
            "Big purchases deserve a forty-eight hour wait before you click buy.",
            "Inflation eats cash slowly, which matters for goals longer than five years.",
            "Write down why you chose an investment so you can check the reason later.",
            "Pensions with an employer match are free money; take the whole match.",
            "Keep the grocery budget realistic or it will be broken every month.",
            "Review subscriptions twice a year; they creep up.",
        ),
        requests=(
            "Can you sanity-check {k}?",
            "How would you approach {k} if you were me?",
            "I'm worried about {k}. Where do I start?",
            "What's a sensible plan for {k}?",
        ),
    ),
    "code": T(
        heads=(
            "The short answer",
            "Why it happens",
            "A minimal example",
            "Testing it",
            "Edge cases",
            "In production",
            "Alternatives",
            "Performance",
            "Logging and metrics",
            "What I'd do next",
        ),
        lines=(
            "For {k}, reproduce the problem in a test first; it turns a hunch into a fact.",
            "Timeouts should be set on every network call; the default is often to wait forever.",
            "Retries need a cap and jitter, or a small outage becomes a retry storm.",
            "Log the request id at every hop so an incident can be followed across services.",
            "Measure before optimising; the slow part is rarely where you expect it.",
            "Keep migrations backwards compatible so a deploy can be rolled back safely.",
            "Feature flags are cheap to add and expensive to forget; give each one an owner.",
            "A post-mortem is for the system, not the person: ask what made the mistake easy.",
            "Pin dependency versions in the application and test upgrades deliberately.",
            "Small pull requests get better reviews than big ones.",
            "Add an index for the query you run most, and check the plan after adding it.",
            "Connection pools that are too small cause queueing that looks like slowness.",
            "For {k}, write down the failure modes before choosing a library.",
            "Make errors carry context: what was being done, with which input, and why it failed.",
            "A health check that tests nothing is worse than none, because it lies.",
            "Caches need an invalidation plan before they need a size.",
            "Prefer boring technology for the parts that must not fail.",
            "Type hints pay for themselves when a codebase outlives its first author.",
            "Alerts should fire on symptoms users feel, not on every internal metric.",
            "Keep the launch checklist short enough that people actually read it.",
        ),
        requests=(
            "Can you help me with {k}? It's been a long week.",
            "What's the clean way to handle {k}?",
            "Review my approach to {k}? I'll paste the gist below.",
            "We keep getting bitten by {k}. Ideas?",
        ),
    ),
    "pets": T(
        heads=(
            "Day to day",
            "Food",
            "Exercise",
            "Training",
            "At the vet",
            "Warning signs",
            "Enrichment",
            "Grooming",
            "Costs",
            "Travel with a pet",
        ),
        lines=(
            "For {k}, a predictable routine calms most dogs more than any product.",
            "Short training sessions of five minutes beat one long session.",
            "Change food gradually over a week to avoid an upset stomach.",
            "A sniffing walk tires a dog more than the same time spent running.",
            "Ask the vet to show you how to check teeth and ears at home.",
            "Sudden changes in thirst, appetite or energy are worth a call to the vet.",
            "Puzzle feeders turn dinner into a game and slow down fast eaters.",
            "Chewing is normal; give something allowed to chew before scolding.",
            "Insurance is cheapest when the animal is young and healthy.",
            "Keep vaccination and worming dates in one note you can find quickly.",
            "Regular weigh-ins at the vet catch slow weight gain early.",
            "A tired dog is a good dog, but a bored one finds its own jobs.",
            "Reward calm behaviour, not only tricks.",
            "Crate training works when the crate is never a punishment.",
            "For {k}, write down what happened before the behaviour; the trigger is usually there.",
            "Hot pavements burn paws; test with the back of your hand in summer.",
            "Brushing a little every day beats a long battle once a month.",
            "Dental disease is the most common problem vets see; chews help a little, brushing "
            "helps a lot.",
        ),
        requests=(
            "Any advice on {k}?",
            "What should I watch for with {k}?",
            "How do I handle {k} better?",
            "Is this normal for {k}?",
        ),
    ),
    "work": T(
        heads=(
            "How I'd frame it",
            "Before the meeting",
            "Talking points",
            "Priorities",
            "Managing up",
            "Your week",
            "Saying no",
            "Follow-up",
            "Longer term",
            "A template",
        ),
        lines=(
            "For {k}, write the one-sentence outcome you want before you write anything else.",
            "Managers respond better to a proposal than to a problem.",
            "Keep a running list of wins; review season is too late to remember them.",
            "Block focus time in the calendar before other people fill it.",
            "Standups work when they are about blockers, not status.",
            "A decision log saves hours of re-arguing the same question.",
            "When priorities clash, ask which one your manager would drop first.",
            "Send the summary within an hour of a meeting while it is fresh.",
            "Say no to the task, not the person, and offer what you can do instead.",
            "One-to-ones belong to you; bring the agenda.",
            "Reorgs are a good moment to ask what success looks like in the new structure.",
            "For {k}, separate what you control from what you can only influence.",
            "A promotion case is evidence, not enthusiasm: scope, impact and examples.",
            "Write things down; memory is not a project management tool.",
            "Meetings without an owner and an agenda can be declined politely.",
            "Feedback lands better when it is specific and about behaviour.",
            "Before a launch, agree who can call it off and on what signal.",
            "Protect the team's attention during crunch weeks; cancel what does not matter.",
        ),
        requests=(
            "Can you help me think through {k}?",
            "How do I bring up {k} with my manager?",
            "I need to prepare for {k}. Where do I start?",
            "Draft a short note about {k} for the team?",
        ),
    ),
    "health": T(
        heads=(
            "What it might be",
            "What to ask the doctor",
            "Day to day",
            "Sleep",
            "Food and supplements",
            "When to worry",
            "Tracking it",
            "Small changes",
        ),
        lines=(
            "For {k}, keep a short diary of symptoms and times before the appointment; "
            "doctors love specifics.",
            "Write your questions down before the visit; ten minutes goes quickly.",
            "Supplements are worth it when a test shows a deficiency, not otherwise.",
            "Retest after about three months when a dose changes.",
            "A regular wake-up time does more for sleep than an early bedtime.",
            "Caffeine after lunch can cost sleep even when you fall asleep easily.",
            "Ask what the result means for you, not just whether it is in range.",
            "Chest pain, sudden weakness or confusion are emergencies, not appointments.",
            "Walking after meals helps energy and blood sugar.",
            "Dentist check-ups every six to twelve months catch problems while they are small.",
            "Take the full course of anything prescribed unless told otherwise.",
            "For {k}, change one thing at a time so you know what helped.",
            "Hydration and daylight in the morning help more than most gadgets.",
            "A second opinion is normal and doctors do not take offence.",
            "Keep a list of medicines and doses on your phone.",
        ),
        requests=(
            "What should I ask about {k}?",
            "Any tips on {k}?",
            "I've been worrying about {k}. Thoughts?",
            "How do I keep on top of {k}?",
        ),
    ),
    "home": T(
        heads=(
            "First steps",
            "Tools",
            "Materials",
            "Costs",
            "Hiring someone",
            "Doing it yourself",
            "Safety",
            "Finishing touches",
            "Maintenance",
        ),
        lines=(
            "For {k}, fix the cause of damp before you paint, or the paint will fail.",
            "Get three quotes for any job over a few hundred and ask each trade what the "
            "others missed.",
            "Sample pots are cheap; paint a large card and look at it morning and evening.",
            "Ventilation beats dehumidifiers in the long run: open windows after showers.",
            "Keep receipts and photos of repairs for insurance and for selling later.",
            "A good primer makes cheap paint look expensive.",
            "Bleed radiators before winter and check the boiler pressure.",
            "Draught-proofing doors and windows is the cheapest warmth there is.",
            "For {k}, decide the budget ceiling before anyone gives you options.",
            "Ask a plumber to show you where the stopcock is; you will need it one day.",
            "Mesh wifi fixes dead spots better than a stronger single router.",
            "Tradespeople booked through recommendations turn up more reliably.",
            "Cover floors properly before painting; the drips always find the carpet.",
            "Test smoke and carbon monoxide alarms monthly.",
            "Silicone around baths and showers lasts about five years.",
        ),
        requests=(
            "How should I tackle {k}?",
            "What would you do about {k}?",
            "Is {k} a DIY job or should I get someone in?",
            "Any tips on {k} before I start?",
        ),
    ),
    "garden": T(
        heads=(
            "Right plant, right place",
            "Soil",
            "Watering",
            "This month",
            "Pests",
            "Feeding",
            "Pruning",
            "Containers",
            "Next season",
        ),
        lines=(
            "For {k}, watch how the sun moves for a day before choosing what to plant.",
            "Add compost every autumn; soil improves slowly and then all at once.",
            "Water deeply and less often so roots go down instead of staying near the surface.",
            "Containers dry out fast in wind; group them together and use bigger pots.",
            "Slugs come out at night; a torch patrol after rain beats pellets.",
            "Sow little and often for salad so you are not drowning in lettuce in June.",
            "Mulch keeps moisture in and weeds down, and the worms do the digging.",
            "Perennials take three years: sleep, creep, then leap.",
            "Label what you plant; you will not remember by next spring.",
            "For {k}, choose plants that look good for more than one season.",
            "Feed tomatoes weekly once the first fruits set.",
            "Prune most flowering shrubs just after they flower.",
            "A water butt pays for itself in the first dry summer.",
            "Let some plants go to seed for the birds and the bees.",
        ),
        requests=(
            "What can I do with {k}?",
            "Any ideas for {k} this season?",
            "Why is everything dying in {k}?",
            "How do I plan {k} for next year?",
        ),
    ),
    "reading": T(
        heads=(
            "If you liked that",
            "Why it works",
            "Something different",
            "Shorter reads",
            "For the commute",
            "Audiobooks",
            "Book club questions",
            "Live music",
            "Around town",
        ),
        lines=(
            "For {k}, pick one book slightly outside your comfort zone each month.",
            "Book clubs work best when someone brings two questions, not a summary.",
            "Audiobooks make commutes and chores disappear.",
            "Short story collections are perfect when attention is scattered.",
            "Rereading an old favourite is not cheating; it is a different book the second time.",
            "Library apps often have the new releases without the price.",
            "A notebook for lines you liked makes books stay with you longer.",
            "Gigs in small venues are cheaper and often better than arena shows.",
            "Check the support act; some of the best nights are the surprise.",
            "For {k}, give a book fifty pages; life is too short after that.",
            "Alternate fiction and non-fiction to avoid fatigue.",
            "Translated fiction opens whole shelves most people never visit.",
            "Follow a favourite author's recommendations; they read widely.",
        ),
        requests=(
            "What should I read next for {k}?",
            "Any recommendations around {k}?",
            "Help me pick something for {k}?",
            "Thoughts on {k}?",
        ),
    ),
    "family": T(
        heads=(
            "What might help",
            "Talking about it",
            "Routine",
            "Presents",
            "Planning the day",
            "Keeping in touch",
            "For the kids",
            "For yourself",
        ),
        lines=(
            "For {k}, decide what matters most to you before everyone else weighs in.",
            "Routines help children more than rules do.",
            "Present ideas are easier when you keep a running note through the year.",
            "Experiences are remembered longer than objects.",
            "Plan family visits with an exit time; everyone relaxes when the end is clear.",
            "A weekly call at a fixed time keeps friendships going across distance.",
            "After-school activities work when the child chose them.",
            "Birthday dinners are better booked early and for a smaller group.",
            "For {k}, ask the person rather than guessing what they want.",
            "Shared calendars stop half the arguments in a busy house.",
            "One-on-one time with each child, even ten minutes, pays off.",
            "Handwritten cards are rare enough now to mean something.",
            "Let grandparents have their traditions; the children remember them.",
        ),
        requests=(
            "Help me plan {k}?",
            "Any ideas for {k}?",
            "How do I handle {k} kindly?",
            "What would you suggest for {k}?",
        ),
    ),
    "learning": T(
        heads=(
            "How to practise",
            "Materials",
            "Speaking",
            "Listening",
            "Grammar",
            "Exams",
            "Staying motivated",
            "A weekly plan",
        ),
        lines=(
            "For {k}, fifteen minutes every day beats two hours on Sunday.",
            "Spaced repetition apps work if you add words you actually met.",
            "Speak from the first week, badly; fluency comes from mistakes.",
            "Graded readers make reading pleasant long before native books do.",
            "Record yourself once a month to hear progress you would otherwise miss.",
            "Past papers are the best exam preparation there is.",
            "A tutor is most useful for conversation and correction, not for vocabulary lists.",
            "For {k}, set a goal with a date, such as an exam or a trip.",
            "Listen to podcasts at slower speed first, then normal speed.",
            "Write a short diary entry in the language each evening.",
            "Learn phrases, not single words.",
            "Online courses work best with a fixed weekly slot and a friend doing it too.",
        ),
        requests=(
            "How do I get better at {k}?",
            "I'm plateauing with {k}. Ideas?",
            "Make me a plan for {k}?",
            "What's the best way to practise {k}?",
        ),
    ),
    "gadgets": T(
        heads=(
            "What I'd buy",
            "What to look for",
            "Battery",
            "Privacy settings",
            "Backups",
            "Repairs",
            "Accessories",
            "Cars and charging",
        ),
        lines=(
            "For {k}, decide the three features you use daily and ignore the rest of the "
            "spec sheet.",
            "Buy last year's model when the new one adds little.",
            "Turn on automatic backups before anything else.",
            "A good case and a screen protector are cheaper than a repair.",
            "Check how many years of software updates a phone will get.",
            "Battery health drops faster when it sits at 100 percent all night.",
            "Electric cars make most sense when you can charge at home.",
            "Test-drive a car on the roads you actually use, not the dealer's loop.",
            "For {k}, read the reviews from people who have owned it for a year.",
            "Password managers remove a whole class of problems.",
            "Two-factor authentication on email is the most important setting you have.",
            "Trade-in offers are often worse than selling privately.",
        ),
        requests=(
            "Should I upgrade {k}?",
            "What do you think about {k}?",
            "Help me choose for {k}?",
            "Any tips for {k}?",
        ),
    ),
}
# Lines that talk around what the questions ask, in the questions' own words, without any
# answer: {k} the focus, {m} a month, {n} one of the user's people (or pet, or project).
ECHO: dict[str, tuple[str, ...]] = {
    "travel": (
        "Where you sleep shapes the whole trip, so pick the accommodation before the sights.",
        "If you are planning a trip for {m}, check which hotels close for the season.",
        "A hotel I'd recommend to one couple can be wrong for another; think about noise first.",
        "The best thing you eat while travelling is rarely at the famous place.",
        "When {n} and you stay somewhere new, ask the front desk where they eat.",
        "Travelling in {m} means fewer crowds but shorter opening hours.",
        "Most people remember the food highlight of a trip more than the museum.",
        "Before you book, look up where the flight actually lands and how late it departs.",
        "The trip you take in {m} will cost less if you book the stay first.",
        "Accommodation near the station suits an early departure.",
    ),
    "cooking": (
        "The standout dish at a restaurant is usually the one the kitchen has cooked for years.",
        "When you eat out in {m}, the seasonal menu is the one to order from.",
        "If you rave about a plate, ask what is in it; most kitchens will tell you.",
        "A new restaurant needs a few months to settle; go back before you judge it.",
        "Trying a new place with {n} is the easiest way to order more dishes.",
        "A recipe suggested for one evening can become your go-to for the rest of the year.",
        "The dish you love at a restaurant is often simpler to cook at home than it looks.",
        "Which main you choose sets the timing for everything else on the table.",
        "Hosting in {m} is easier with a slow-cooked dish that waits for guests.",
        "Write down what you cooked and for whom, so you do not repeat it.",
    ),
    "fitness": (
        "Your finishing time in a race depends on the course as much as on your fitness.",
        "How long a race takes you matters less than how you felt in the last third.",
        "A race in {m} means training through the worst weather of the year.",
        "The usual training volume should rise slowly, week by week.",
        "Where you work out matters less than how often you go.",
        "If {n} wants to train with you, pick a session you can both talk through.",
        "The exercise I'd suggest first is always the one you will actually do.",
        "A goal race gives the training a shape and a date.",
        "How fast you ran last time is a starting point, not a promise.",
        "Any gym will do if the opening hours fit your week.",
    ),
    "finance": (
        "Before you pay the landlord more, check what similar places cost nearby.",
        "What you spend at the supermarket is easier to control with a weekly cash amount.",
        "A savings target should have a date next to it.",
        "How much you paid for something matters less than how often you use it.",
        "The big purchase you make in {m} often shows up in the next month's budget.",
        "Where you put money depends on when you need it back.",
        "If {n} does the spreadsheets, agree the numbers together once a month.",
        "Treating yourself is fine when it is planned.",
        "What we pay for rent is usually the largest line; look at it first.",
        "The advice I'd give on any pot of money starts with the timeline.",
    ),
    "code": (
        "The technology a product is built with matters less than how well the team knows it.",
        "What caused an outage is rarely the thing that made it long.",
        "A post-mortem in {m} should still be readable in a year.",
        "When a service goes down, write down the timeline before you write the fix.",
        "The library I'd recommend depends on who will maintain the code after you.",
        "If {n} is on call, make sure the runbook says what to check first.",
        "Which package you choose matters less than pinning its version.",
        "The plan after an incident should name an owner for every follow-up.",
        "A launch date is a promise; keep a list of what could move it.",
        "Services that went down once usually go down again the same way.",
    ),
    "pets": (
        "A health problem that turns up suddenly deserves a call to the vet.",
        "Keep a note of what the vet said at each visit; it makes the next one quicker.",
        "If anything seems wrong with {n}, write down when it started.",
        "The clinic matters less than seeing the same vet each time.",
        "What you feed a dog can change its coat within a month.",
        "A puppy's name should be short and easy to call across a park.",
        "{n} will show you when something is off long before any test does.",
        "Checkups in {m} are a good time to update vaccinations.",
        "Keeping a dog busy on rainy days is mostly about sniffing and chewing.",
        "The last visit to the vet is the best guide to the next one.",
    ),
    "work": (
        "After a meeting, write down what the plan is and who owns each step.",
        "If someone is heading to another office, agree the handover before they go.",
        "Who you answer to shapes your week more than any job title.",
        "What you do for a living is more than the title on your badge.",
        "When the team gets together every morning, keep it to blockers.",
        "If {n} is covering for you, leave notes they can follow without calling.",
        "The review in {m} is a good moment to reset priorities.",
        "A new boss usually changes the rhythm of one-to-ones first.",
        "How you open a meeting decides how the rest of it goes.",
        "The decision made in a review should be written where everyone can find it.",
    ),
    "health": (
        "Lab results are easier to read with the reference ranges next to them.",
        "Ask the doctor what the results say about the trend, not only this test.",
        "Where you go when you need a doctor should be somewhere you can reach quickly.",
        "A supplement dose should be checked again after a few months.",
        "If you need your teeth checked, book the next visit as you leave.",
        "Results from {m} are a baseline for the next test.",
        "A habit I'd suggest for most people is a fixed time to get up.",
        "{n} may notice changes in your energy before you do.",
        "A new practice usually wants your old records; ask them to transfer them.",
        "What the doctor has you on should be written down with the dose.",
    ),
    "home": (
        "Water problems in a bathroom or kitchen get worse slowly; deal with them early.",
        "Choosing a shade for the walls is easier in daylight than in the shop.",
        "The person who came to fix something last time is worth keeping on your list.",
        "What a repair cost us is a useful guide for the next quote.",
        "A plumber in {m} is easier to book than one in a cold snap.",
        "If {n} wants to repaint, agree the budget before the colour.",
        "Internet providers change their prices after the first year.",
        "What you buy for a damp room should fix the cause, not hide it.",
        "Any room feels bigger in a pale colour, but not every room should.",
        "Keep the name of whoever dealt with the last problem in the house.",
    ),
    "garden": (
        "What you plant in a bed in {m} depends on the frost dates.",
        "Everything you've planted should be labelled, or you will forget.",
        "The plant I'd suggest for shade is rarely the one in the shop window.",
        "What grows well in one corner can fail a metre away.",
        "If {n} wants a project, give them one bed of their own.",
        "List what you grew this year so next year starts from it.",
        "Growing something you can eat keeps you going back to the garden.",
        "A bed that gets three hours of sun is still a bed.",
        "The allotment and the balcony need different plants.",
        "What you put in the ground in spring decides the summer.",
    ),
    "reading": (
        "The author of a book matters less than whether the first chapter holds you.",
        "The novel you finish in {m} tends to colour the month.",
        "A book club picks better when each person brings one title.",
        "Where you see a band play changes how you hear them.",
        "Seeing a band live in {m} is cheaper on a weeknight.",
        "If {n} rates a book highly, ask what they liked about it.",
        "The book I'd recommend before a trip is one set in the place.",
        "Which gig you go to first sets the bar for the rest of the year.",
        "Who wrote a book you loved is worth remembering; their other books are often better.",
        "A rating out of ten says more with a sentence next to it.",
    ),
    "family": (
        "Celebrating a birthday somewhere new is a gift in itself.",
        "The present you give {n} should say you listened.",
        "After-school activities change every year; let the child choose.",
        "Where a friend works now matters less than whether they like it.",
        "A gift I'd suggest for most people is an experience rather than an object.",
        "Presents bought in {m} often end up being the best ones.",
        "If {n} has a new job, a small card goes a long way.",
        "Every present you have bought someone is worth writing down.",
        "A birthday dinner is easier with a booking and a backup.",
        "Keeping track of what {n} likes makes every occasion easier.",
    ),
    "learning": (
        "Who teaches you matters more than which book you use.",
        "How you do on a test is a snapshot, not a verdict.",
        "A course I'd suggest is one with homework you cannot skip.",
        "An exam in {m} gives the winter a goal.",
        "If {n} is learning too, quiz each other on the bus.",
        "A new tutor usually starts by finding the gaps.",
        "The score on a language test says little about speaking.",
        "The evening course you pick should fit your worst week, not your best.",
        "Changing teachers is normal when you move up a level.",
        "Test results are most useful when you look at what went wrong.",
    ),
    "gadgets": (
        "Which phone you have matters less than how long it gets updates.",
        "The car we drive decides half of our weekend plans.",
        "A model I'd recommend today may be replaced in {m}.",
        "If {n} wants a new gadget, ask what problem it solves.",
        "What to buy for a need is easier when you write the need down first.",
        "A new car changes your insurance and your parking.",
        "The gadget you use every day deserves the money; the rest can be cheap.",
        "Trading in an old phone is rarely worth it.",
        "Which model you choose matters less than the warranty.",
        "Replacing a device every two years is a habit, not a need.",
    ),
}
# The cast role an answer on a topic names as {n}.
ECHO_ROLE = {
    "pets": "pet",
    "work": "coworker",
    "code": "coworker",
    "family": "giftee",
    "garden": "kid",
    "fitness": "friend",
    "reading": "friend",
}
GENERAL = (
    "If {n} is part of this, ask what they think before you decide.",
    "{n} will probably have an opinion on {k}; hear it early.",
    "It sounds like {n} matters here, so keep them in the loop.",
    "Since you mentioned {n}, plan the part that involves them first.",
    "The main thing with {k} is to make the next step small enough that you actually take it.",
    "It helps to write the plan for {k} down in one place so it does not live only in your head.",
    "There is rarely one right answer for {k}; there are trade-offs, and naming them makes "
    "the choice easier.",
    "If you only do one thing this week about {k}, do the part that removes a worry.",
    "Most of the value comes from the first twenty percent of effort; the rest is polish.",
    "Check back in a month and see what actually changed; that tells you what to keep.",
    "People in your position often overestimate what they can do in a week and "
    "underestimate what they can do in a quarter.",
    "Ask someone who has done it recently; their advice will be more current than mine.",
    "Set a reminder to revisit {k} after the next big change in your schedule.",
    "It is fine to change the plan; it is only a tool.",
    "Keep a short note of what you tried and how it went, so next time starts from there.",
    "A small budget for mistakes takes the pressure off getting everything right.",
    "Whatever you choose for {k}, make it easy to undo for the first few weeks.",
    "Your instinct here is reasonable; the details below are about making it easier.",
    "Think about who else is affected by {k} and tell them early.",
    "Comparing options side by side in a small table often settles it quickly.",
    "Do the boring preparation first; it is what makes the enjoyable part go well.",
    "If something feels off, it usually is; trust that and look closer.",
)
ACKS = (  # how an answer first takes in the news the user brought, by its name
    "Thanks for the update on {x}.",
    "Good to hear about {x}.",
    "Noted about {x}.",
    "That's news about {x}, thanks for telling me.",
    "Glad you mentioned {x}.",
)
OPENERS = (
    "Good question.",
    "Happy to help with this.",
    "Let's work through it.",
    "Here's how I'd think about it.",
    "Great that you're planning ahead.",
    "That's a common situation, and there's a fair amount you can do.",
    "Sure, here's a practical take.",
    "Nice, this is a fun one.",
)
CLOSERS = (
    "Want me to turn this into a checklist?",
    "Tell me how it goes and we can adjust.",
    "If you share a bit more detail I can make this more specific.",
    "Happy to go deeper on any of these.",
    "Shall I draft the next step for you?",
    "Let me know which of these fits your week best.",
)
GREETINGS = (
    "Hi!",
    "Morning.",
    "Hey, me again.",
    "Evening!",
    "Quick one.",
    "Back with another question.",
    "Hope you're well.",
    "Hello again.",
    "",
)
FOLLOWUPS = (
    "Thanks, that helps. ",
    "Makes sense. ",
    "OK, one more thing. ",
    "Got it. ",
    "Brilliant. ",
    "Hmm, interesting. ",
    "",
)
REVISITS = (
    "Back to {focus} for a second: I've been thinking about it more.",
    "Coming back to {focus}. Can you go over it again from a different angle?",
    "Still stuck on {focus}, to be honest.",
    "Re {focus}: I talked it over at home and we're not sure.",
)
REVISE_ASKS = (  # the user back on advice after something changed
    "Back to {focus}: the budget got tighter since. Does that change your pick?",
    "Coming back to {focus}. {partner} has doubts about what you suggested; would you still "
    "go with it?",
    "Re {focus}: things moved on since we talked. Is your suggestion still the same?",
    "About {focus} again: I read some bad reviews of what you suggested. Still your choice?",
)
REVISED = (  # the answer's revised recommendation
    "Given that, I'd switch from {old} to **{v}**.",
    "With that change, my pick is now {v} rather than {old}.",
    "In that case drop {old}; {v} fits better now.",
)
PICK_UPDATE_ASKS = (  # asking for a recommendation the assistant revised
    "What do you recommend for {focus} now, after we went over it again?",
    "After the change of plans, what was your final suggestion for {focus}?",
)
CHATTER = {
    "travel": (
        "{partner} wants somewhere warm this time.",
        "The passports expire next year.",
        "{friend} keeps sending me hotel links.",
        "We still owe {sister} a visit.",
    ),
    "cooking": (
        "{partner} is doing the washing up, so I cook.",
        "The oven runs hot, I swear.",
        "{friend} wants the recipe, obviously.",
        "Our fridge is tiny.",
    ),
    "fitness": (
        "My knees are fine, before you ask.",
        "{friend} wants to train together.",
        "The gym was packed again.",
        "My watch says I'm unproductive.",
    ),
    "finance": (
        "{partner} does the spreadsheets, I do the worrying.",
        "Payday is the 25th.",
        "The bank app changed its layout again.",
        "Bills went up this month.",
    ),
    "code": (
        "{coworker} is on call this week.",
        "Our CI takes forty minutes.",
        "{project} is eating the whole team.",
        "My manager wants an update by Friday.",
    ),
    "pets": (
        "{pet} is asleep on my feet as I type.",
        "{pet} hates the vet's car park.",
        "The dog walker cancelled again.",
        "{pet} stole a sock this morning.",
    ),
    "work": (
        "My manager moved our one-to-one again.",
        "{coworker} is off sick so I'm covering.",
        "{project} has three deadlines this month.",
        "The office coffee machine died.",
    ),
    "health": (
        "Slept badly again.",
        "The surgery's phone line is impossible.",
        "My doctor is lovely but always late.",
        "{partner} says I should rest more.",
    ),
    "home": (
        "The landlord is slow to reply.",
        "{partner} wants to repaint everything.",
        "The boiler is making noises.",
        "Our neighbours are renovating too.",
    ),
    "garden": (
        "The slugs are winning.",
        "{kid} wants a sunflower competition.",
        "It rained all week.",
        "The compost bin smells fine, promise.",
    ),
    "reading": (
        "{friend} lent me three books at once.",
        "I read mostly on the train.",
        "My book club meets on Thursdays.",
        "{partner} only reads crime novels.",
    ),
    "family": (
        "{kid} has a cold again.",
        "Mum calls every Sunday.",
        "{sister} is visiting next month.",
        "{partner}'s parents are coming over.",
    ),
    "learning": (
        "My tutor says my accent is improving.",
        "I practise on the bus.",
        "{friend} is learning too, we quiz each other.",
        "Exams make me nervous.",
    ),
    "gadgets": (
        "My phone battery is dying by noon.",
        "{partner} wants a smart speaker.",
        "The car needs a service soon.",
        "{kid} broke another charger.",
    ),
}
# Background a user gives before a request, a few sentences at a time: a long user turn, with
# the topic's words and the user's people, where a fact is said in passing.
STORIES = {
    "travel": (
        "{partner} and I have been going back and forth about where to go this year.",
        "Last time we booked everything in a rush and ended up paying for a hotel we hated.",
        "{friend} keeps telling us the best trips are the ones with no plan at all.",
        "We'd like somewhere we can walk everywhere, with good food and not too many tourists.",
        "Budget-wise we're trying to be sensible, so flights under a couple of hundred each.",
        "{sister} might join for a few days, which complicates the rooms a bit.",
        "I always overpack and then carry half of it around unused.",
        "We're not museum people really, more markets, long lunches and a view at sunset.",
        "The last trip was lovely but the hotel was miles from anything.",
        "Work is mad until the end of the month, so it has to be after that.",
    ),
    "cooking": (
        "{partner} is the adventurous eater here, I'm more of a comfort-food person.",
        "We've been eating out too much lately, so I'm trying to cook more at home.",
        "Our kitchen is tiny, two hobs and an oven that runs hot.",
        "{friend} is vegetarian and always brings wine, so I like to make an effort.",
        "I want things I can prepare the night before and just finish on the day.",
        "Last time I tried something ambitious the timing fell apart completely.",
        "We've got a drawer full of spices I bought for one recipe each.",
        "Honestly half the fun of a new restaurant for me is trying to copy a dish at home.",
    ),
    "fitness": (
        "My running has been up and down since the winter.",
        "{friend} wants to train together but our paces are quite different.",
        "I can usually manage three sessions a week, four if work is quiet.",
        "My watch keeps telling me I'm not recovered, which is annoying.",
        "The gym near work gets packed after six, so mornings are easier.",
        "I'd like to get faster without getting injured again like last year.",
        "Long runs on Sundays are the one thing I never skip.",
        "My legs felt heavy all week, probably the stairs at the office.",
    ),
    "finance": (
        "{partner} does the spreadsheets and I do the worrying, basically.",
        "We've been trying to be more deliberate about where the money goes each month.",
        "Prices went up everywhere this year and the budget hasn't caught up.",
        "I don't want anything complicated or anything I have to check every day.",
        "We might need some of it for a deposit in a few years, so not all locked away.",
        "I keep buying things on a whim and regretting half of them.",
        "The bank's app is useless for seeing where it all goes.",
        "We'd like to treat ourselves now and then without feeling guilty about it.",
    ),
    "code": (
        "{coworker} is on call this week so I'm picking up the reviews.",
        "The codebase is about eight years old and nobody loves it.",
        "{project} is eating most of the team's time right now.",
        "Our CI takes forty minutes, which makes everything slower than it should be.",
        "We had a rough few weeks with incidents and everyone is a bit tired.",
        "I'd rather use a small, well-maintained library than write this myself.",
        "Management wants a date, engineering wants to do it properly, the usual.",
        "Most of our problems come from things nobody documented.",
    ),
    "pets": (
        "{pet} is asleep on my feet as I type this.",
        "The dog walker cancelled again so it's been short walks all week.",
        "{friend} has a puppy now and keeps sending me videos.",
        "{pet} has been a bit off lately, eating less and sleeping more.",
        "The vet's waiting room is always full of anxious dogs and anxious owners.",
        "We try to keep a routine: walk, breakfast, nap, the usual.",
        "{pet} hates the car, which makes every vet visit an adventure.",
        "Rainy days are the worst, nobody gets enough exercise.",
    ),
    "work": (
        "My manager moved our one-to-one again, third time this month.",
        "{coworker} is off sick so I'm covering two projects.",
        "{project} has three deadlines this month and I'm on all of them.",
        "The team changed a lot this year, half the faces are new.",
        "I'd like to be taken more seriously in meetings without being pushy.",
        "Reviews are coming up and I never know how to talk about my own work.",
        "There's been a lot of reorganising and nobody is sure who owns what.",
        "I get most of my real work done before ten, before the meetings start.",
    ),
    "health": (
        "I've been sleeping badly for a couple of weeks.",
        "The surgery's phone line is impossible before nine.",
        "{partner} says I should rest more and worry less.",
        "I'm trying to be better about seeing a doctor early instead of waiting.",
        "Energy has been low in the afternoons, even with coffee.",
        "My back is fine most days, it's the long days at the desk that do it.",
        "I'd like one or two small changes rather than a whole new routine.",
        "I've been reading too much online about symptoms, which doesn't help.",
    ),
    "home": (
        "The landlord is slow to reply to anything.",
        "{partner} wants to repaint everything, I want to fix what's broken first.",
        "The flat is lovely in summer and damp in winter.",
        "Our neighbours are renovating so there's dust and noise all day.",
        "We're trying not to spend much until we know if we're staying.",
        "Every time we fix one thing in this place another one breaks.",
        "The boiler is making noises again.",
        "We've got a list of jobs on the fridge that only ever grows.",
    ),
    "garden": (
        "The slugs are winning, as usual.",
        "{kid} wants a sunflower competition this year.",
        "It's rained all week, so nothing has been done outside.",
        "We don't get much sun at the back, three or four hours on a good day.",
        "I'd like more things we can actually eat, not just look at.",
        "Last year I planted far too much at once and lost half of it.",
        "The compost bin is finally working, I think.",
        "I'm a lazy gardener really, I want things that look after themselves.",
    ),
    "reading": (
        "{friend} lent me three books at once, so the pile is growing.",
        "I read mostly on the train and before bed.",
        "My book club meets on Thursdays and I'm always behind.",
        "{partner} only reads crime novels and judges my choices.",
        "I've been going to more gigs this year, small venues mostly.",
        "I want something that pulls me in from the first page.",
        "I gave up on two books in a row, which is unusual for me.",
        "Audiobooks work for walks but not for anything complicated.",
    ),
    "family": (
        "{kid} has a cold again, so the week is chaos.",
        "Mum calls every Sunday and asks the same questions.",
        "{sister} is visiting next month and wants to see everyone.",
        "{partner}'s parents are coming over for the weekend.",
        "I'm terrible at presents, I always leave it to the last minute.",
        "Birthdays in our family are a big deal, everyone keeps score.",
        "{friend} always seems to find the perfect gift, it's infuriating.",
        "The after-school schedule is a puzzle every single term.",
    ),
    "learning": (
        "My tutor says my accent is improving, which is nice to hear.",
        "I practise on the bus, twenty minutes each way.",
        "{friend} is learning too, so we quiz each other.",
        "Exams make me nervous, even small ones.",
        "I'd like to learn something completely unrelated to work this year.",
        "I start courses with energy and drop them by week four, usually.",
        "Evenings are the only time I have, and I'm tired by then.",
        "I learn best with homework and a deadline, otherwise I drift.",
    ),
    "gadgets": (
        "My phone battery is dying by noon these days.",
        "{partner} wants a smart speaker, I'm not convinced.",
        "The car needs a service soon, and the tyres too.",
        "{kid} broke another charger, the fourth this year.",
        "I hate replacing things that still mostly work.",
        "I'd rather buy one good thing than three cheap ones.",
        "Reviews online all contradict each other.",
        "Half our devices don't talk to each other, which drives me mad.",
    ),
}
# What a user asks next in the same session, about its subject {k}: in the words the later
# questions use (stay, cost, vet, recommend...), without any answer.
FOLLOWUP_ASKS = {
    "travel": (
        "And where would you stay for {k}, roughly? Hotel or apartment?",
        "How many days would you give {k}? We don't want to rush it.",
        "What would the trip cost, roughly, for {k}? Flights, hotel and food.",
        "Anything we should eat while we're there for {k}?",
        "Is it worth paying more for a hotel with breakfast on {k}?",
        "What's the best way from the airport for {k}?",
    ),
    "cooking": (
        "And what would you serve with it, for {k}?",
        "If we eat out instead, what kind of restaurant would suit {k}?",
        "Which dish would you cook if I only had an hour for {k}?",
        "What should I order next time we try somewhere new, thinking of {k}?",
        "Can you give me a shopping list for {k}?",
    ),
    "fitness": (
        "How would the next race fit around {k}?",
        "What finishing time is realistic with {k}, do you think?",
        "Should I move some sessions to the gym for {k}?",
        "Which exercise would you drop first if I'm short of time with {k}?",
        "How do I know if {k} is too much?",
    ),
    "finance": (
        "How much should we keep aside each month for {k}?",
        "What would you spend less on, for {k}?",
        "Is it worth paying for advice on {k}, or is that overkill?",
        "How do I stop buying things on a whim, with {k} in mind?",
        "What does {k} cost us in a normal month, roughly?",
    ),
    "code": (
        "Which library would you use for that part of {k}?",
        "How do we stop this taking a service down again, for {k}?",
        "What should the post-mortem say about {k}?",
        "How would you test {k} before the launch?",
        "Could you sketch the code for {k}?",
    ),
    "pets": (
        "Should I take {k} to the vet for that, or wait?",
        "What food would you give with {k} in mind?",
        "How often should a dog go to the clinic for checkups, thinking of {k}?",
        "Is it normal for {k}, at that age?",
        "What would you ask the vet next time, about {k}?",
    ),
    "work": (
        "How do I bring up {k} with my manager?",
        "What should I say in the meeting about {k}?",
        "Who on the team should own {k}, do you think?",
        "Can you draft a short message about {k}?",
        "What would a good outcome for {k} look like?",
    ),
    "health": (
        "Should I ask the doctor about {k}, or is it nothing?",
        "What dose of anything would make sense for {k}? I'll check with the GP.",
        "What results should I ask for, with {k}?",
        "Which habit would you start with for {k}?",
        "Who should I see about {k}, a GP or a specialist?",
    ),
    "home": (
        "Roughly what would a repair like that cost, for {k}?",
        "Would you paint first or fix first, for {k}?",
        "What would you buy for {k} if money were tight?",
        "Should I get someone in for {k}, or try it myself?",
        "How do I find a decent plumber, thinking of {k}?",
    ),
    "garden": (
        "What would you plant next for {k}?",
        "When should I put things in the ground for {k}?",
        "What grows well next to what I already have in {k}?",
        "How do I keep the slugs off {k}?",
        "What can we actually eat from {k} this year?",
    ),
    "reading": (
        "What should I read next, after {k}?",
        "Any book you'd recommend along the lines of {k}?",
        "Would {k} make a good pick for the book club?",
        "Any bands worth seeing live, in the spirit of {k}?",
        "Who else writes like that, thinking of {k}?",
    ),
    "family": (
        "What present would you get, for {k}?",
        "How much should I spend on a gift for {k}?",
        "What would make the birthday special, for {k}?",
        "How do I handle the family side of {k}?",
        "Any ideas for the kids, around {k}?",
    ),
    "learning": (
        "Which course would you take next, for {k}?",
        "How do I prepare for the exam, with {k}?",
        "What should I ask my tutor about {k}?",
        "What score should I aim for on the next test, for {k}?",
        "How many hours a week is realistic for {k}?",
    ),
    "gadgets": (
        "Which model would you buy for {k}?",
        "Is the phone I have good enough for {k}?",
        "Should I wait for the new version, for {k}?",
        "What would you recommend for the car, thinking of {k}?",
        "How much should I spend on {k}?",
    ),
}
PASTE_ASKS = (  # a user turn that pastes a note of the user's own, news and all
    "Can you tidy this up before I send it to {partner}?",
    "Here's my note from this week, can you turn it into a short update?",
    "Could you make this message to {friend} sound less rambling?",
    "I wrote this for my journal; can you pull out the to-dos?",
    "Can you shorten this for the family group chat?",
)
NEWS = ("Oh, and news: ", "Also: ", "Update: ", "Side note: ", "")


# ------------------------------------------------------------------------ structured blocks


def _itinerary(r: random.Random, focus: str) -> str:
    acts = words(
        "a slow breakfast near the market, the old town on foot, a river walk, "
        "the fine arts museum, a cooking class, the botanical garden, a ferry ride, "
        "the cathedral roof, a food hall lunch, the covered market, the castle hill, "
        "the design museum, a bike tour, a beach afternoon, a wine bar crawl, "
        "the street art quarter, a day trip by train, the flea market, a spa evening"
    )
    days = r.randint(3, 5)
    lines = [f"**A rough outline for {focus}:**", ""]
    for d in range(1, days + 1):
        a, b = r.sample(acts, 2)
        lines.append(f"- Day {d}: {a} in the morning, {b} after lunch, early dinner.")
    return "\n".join(lines)


def _ingredients(r: random.Random, focus: str) -> str:
    items = words(
        "olive oil, two onions, four garlic cloves, a bunch of parsley, a lemon, "
        "a tin of tomatoes, 400 g of chickpeas, a knob of butter, 200 ml of stock, "
        "a pinch of chilli flakes, smoked paprika, a handful of spinach, 300 g of rice, "
        "two carrots, a celery stick, fresh thyme, a splash of white wine, crusty bread"
    )
    picked = r.sample(items, r.randint(5, 9))
    return "\n".join([f"**Shopping list for {focus}:**", ""] + [f"- {i}" for i in picked])


def _week_table(r: random.Random, focus: str) -> str:
    days = "Mon Tue Wed Thu Fri Sat Sun".split()
    kinds = words(
        "rest, easy 5 km, easy 8 km, intervals 6 x 800 m, strength 30 min, tempo 20 min, "
        "long run 14 km, long run 18 km, mobility 20 min, cross-training 40 min, hills 8 x 60 s"
    )
    rows = [f"**A sample week for {focus}:**", "", "| day | session |", "|---|---|"]
    rows += [f"| {d} | {r.choice(kinds)} |" for d in days]
    return "\n".join(rows)


def _split_table(r: random.Random, focus: str) -> str:
    lines = words("essentials, savings, fun money, irregular bills, giving, investments")
    shares = sorted((r.randint(5, 40) for _ in range(4)), reverse=True)
    rows = [f"**One way to split it for {focus}:**", "", "| pot | share |", "|---|---|"]
    rows += [f"| {n} | {s} percent |" for n, s in zip(r.sample(lines, 4), shares, strict=True)]
    return "\n".join(rows)


def _code(r: random.Random, focus: str) -> str:
    name = r.choice(("fetch_orders", "sync_users", "load_report", "send_digest", "rebuild_index"))
    wait = r.choice((0.2, 0.5, 1.0))
    tries = r.randint(3, 6)
    return "\n".join(
        (
            f"A minimal sketch for {focus}:",
            "",
            "```python",
            f"def {name}(client, *, attempts={tries}, wait={wait}):",
            "    for attempt in range(attempts):",
            "        try:",
            "            return client.get(timeout=5)",
            "        except TimeoutError:",
            "            time.sleep(wait * 2 ** attempt)",
            f'    raise RuntimeError("{name} failed after retries")',
            "```",
        )
    )


def checklist(r: random.Random, focus: str) -> str:
    steps = words(
        "write down the goal, pick a date, tell one person, set a reminder, "
        "do the first small step today, review after a week, adjust what did not work, "
        "keep notes, compare the options, ask for a second opinion, set a budget"
    )
    picked = r.sample(steps, r.randint(4, 6))
    return "\n".join([f"**Checklist for {focus}:**", ""] + [f"- [ ] {s}" for s in picked])


BLOCKS = {
    "travel": _itinerary,
    "cooking": _ingredients,
    "fitness": _week_table,
    "finance": _split_table,
    "code": _code,
}
# The ongoing subjects of a chat, by topic: the slot kind a storyline's subject fills (a city
# being planned and visited, the dog, a project, a room being redone) and how a session on it
# names it. A session follows one storyline; its news is mostly about that subject.
STORYLINES = {
    "travel": ("part:city", "our trip to {s}"),
    "cooking": ("cast:club", "cooking for {s}"),
    "fitness": ("part:area", "{s}"),
    "finance": ("part:goal", "saving for {s}"),
    "code": ("cast:project", "{s}"),
    "pets": ("cast:pet", "{s}"),
    "work": ("cast:project", "the {s} plan"),
    "health": ("part:complaint", "{s}"),
    "home": ("part:room", "the {s}"),
    "garden": ("cast:bed", "{s}"),
    "reading": ("cast:bookclub", "{s}"),
    "family": ("cast:giftee", "presents for {s}"),
    "learning": ("part:lang", "learning {s}"),
    "gadgets": ("part:category", "the new {s}"),
}
# Questions that gather what the user said about one recurring subject across sessions (a
# rundown): by the kind of slot the subject fills; {s} the subject, {since} "" or " since
# March 2026".
RUNDOWNS = {
    "cast:pet": (
        "Catch me up on {s}{since}: what have I told you about the vet, the food and so on?",
        "Give me a rundown of everything about {s}{since}.",
    ),
    "cast:project": (
        "Where do things stand with {s}{since}? Dates and decisions, please.",
        "Summarise what I've told you about {s}{since}.",
    ),
    "cast:friend": (
        "What's been going on with {s}{since}? Everything I've mentioned.",
        "Remind me of all the news about {s}{since}.",
    ),
    "part:city": (
        "Everything about {s} we've talked about{since}: give me the details.",
        "What do I need to remember about {s}{since}? All of it.",
    ),
    "part:room": (
        "Remind me of everything to do with the {s}{since}.",
        "What's happened with the {s}{since}? Work, money, all of it.",
    ),
}
ORDER_THREE = (
    "Put these in order, earliest first: {a}, {b} and {c}.",
    "Which came first, second and last: {a}, {b} or {c}?",
)
# How a user wraps a question asked weeks later: a lead-in and a reason, in everyday words.
ASK_LEADS = (
    "Remind me: ",
    "Quick one: ",
    "I've forgotten, ",
    "Sorry if I asked before, but ",
    "Can you remind me of something. ",
    "Silly question, ",
    "Before I forget to ask again, ",
)
ASK_REASONS = (
    " {partner} asked me and I blanked.",
    " I need it for a form.",
    " Just want to double-check before I tell anyone.",
    " I'm writing it down this time.",
    " It came up at dinner last night.",
    " I said the wrong thing to {friend} yesterday.",
    " My memory is useless this week.",
)
ALT_ASKS = (
    "Besides your top pick, which other options did you list for {focus}?",
    "What were the alternatives you mentioned when we discussed {focus}?",
)
CONTEXT_LEADS = (  # how an answer ties a line back to someone the user mentioned
    "With {n} in mind, ",
    "Given what you said about {n}, ",
    "Since {n} is part of this, ",
    "For {n}'s sake, ",
    "Thinking of {n}, ",
)
HEDGES = (
    "In my experience, ",
    "Honestly, ",
    "As a rule of thumb, ",
    "One more thing: ",
    "Worth saying: ",
    "From what you've described, ",
    "Practically, ",
    "If it helps, ",
    "Most people find that ",
    "A useful habit: ",
    "",
    "",
    "",
    "",
    "",
)
TAILS = (
    " That is especially true for {k}.",
    " This matters more than it sounds.",
    " It sounds obvious, but it is often skipped.",
    " I would not overthink it.",
    " You can always change it later.",
    " It is the cheapest improvement here.",
    "",
    "",
    "",
    "",
    "",
    "",
)
