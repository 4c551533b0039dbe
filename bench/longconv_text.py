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
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
DOSE_EVERY = ("daily", "every other day", "twice a week")


def _money(rng: random.Random, lo: int, hi: int, step: int) -> str:
    value = rng.randrange(lo, hi, step)
    return rng.choice(("${:,}", "€{:,}", "£{:,}")).format(value)


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
    "racetime": lambda r: f"{r.randint(0, 4)}:{r.randint(10, 59):02d}:{r.randint(0, 59):02d}",
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
}


# ------------------------------------------------------------------------------ the kinds


@dataclass(frozen=True)
class Kind:
    """One kind of fact: how it is said, how it is asked, and how it can change.

    Slots name a bank (a value used once per chat: an answer), a part (a plain list: may
    repeat) or a cast role (`cast:pet`: a recurring name). `key` identifies an instance
    (unique per chat for the kind), `focus` is the exchange's subject as a noun phrase."""

    name: str
    topic: str
    role: str  # "user" or "assistant" (a recommendation) or "other" (about someone else)
    slots: dict[str, str]
    says: tuple[str, ...]
    asks: dict[str, tuple[str, ...]] = field(default_factory=dict)
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
    all_asks: tuple[str, ...] = ()  # every instance (of the series, or of {year})
    all_slot: str = "v"
    once: bool = False  # a profile fact: one instance per chat (and its updates)
    skip: float = 0.0  # the chance a repeatable kind passes its turn (keeps it plausible)
    mentions: tuple[str, ...] = ()  # later turns naming the key without the answer
    mention_focus: str = ""
    # Questions that name the instance by its month instead of its key (asked when it is the
    # kind's only instance that month): no rare name in the question to match.
    vague: dict[str, tuple[str, ...]] = field(default_factory=dict)


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
            "My pick for you is {v}. It is a little more than the chains but it puts you in the "
            "right neighbourhood and saves you taxis every evening.",
        ),
        asks={
            "v": (
                "Where did you think we should sleep in {city}?",
                "What accommodation did you push for when I was planning {city}?",
            )
        },
        vague={"v": ("Which hotel did you recommend when I was planning a trip in {month}?",)},
        key="city",
        focus="our trip to {city}",
        alts="hotel",
        request=(
            "We're finally doing {city} in {season}. Where should we base ourselves? "
            "Mid-range, not a party area.",
            "Planning {city} for {season}: which area and which hotel would you book?",
        ),
    ),
    K(
        "trip_report",
        "travel",
        "user",
        {"city": "part:city", "v": "hotel", "d": "dish"},
        says=(
            "We got back from {city} on Sunday. We ended up at {v} and the meal we still talk "
            "about is the {d}.",
            "{city} was lovely! Stayed at {v} in the end, and I'd fly back just for the {d}.",
        ),
        asks={
            "v": (
                "Where did we end up sleeping on the {city} trip?",
                "Which place did we actually book in {city}?",
            ),
            "d": (
                "What was the food highlight of our time in {city}?",
                "Which dish did I rave about after coming back from {city}?",
            ),
        },
        key="city",
        focus="the {city} trip",
        vague={
            "v": ("Where did we stay on the trip we took in {month}?",),
            "d": ("What was the best thing I ate while travelling in {month}?",),
        },
        mentions=(
            "Printed the photos from {city} for the hallway.",
            "Still dreaming about {city}.",
        ),
        mention_focus="{city} memories",
        when=("Which hotel were we staying at when we travelled in {month}?",),
        when_slot="v",
    ),
    K(
        "flight",
        "travel",
        "user",
        {"city": "part:city", "v": "flight"},
        says=(
            "Booked the flights for {city}: out on {v}.",
            "Our flight to {city} is on {v}, so the packing list has a deadline now.",
        ),
        asks={"v": ("When do we fly out to {city}?",)},
        key="city",
        focus="getting to {city}",
        changes="v",
        updates=(
            "Annoying: the airline moved our {city} flight, it's now {v}.",
            "Flight change for {city}: we now leave on {v}.",
        ),
        update_asks=(
            "What is the current departure for our {city} flight?",
            "After the airline's changes, when do we leave for {city}?",
        ),
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
        ),
        asks={
            "d": (
                "If I go back to {v}, what should I order again?",
                "Which plate impressed me most at {v}?",
            ),
            "v": ("Where did I have that amazing {d}?", "Which restaurant served the {d} I loved?"),
        },
        key="v",
        focus="eating out",
        when=("Which new restaurant did I try in {month}?",),
        all_asks=("Which new restaurants did I try in {year}?",),
        when_slot="v",
        order=("Which did I try first, {a} or {b}?",),
        order_slot="v",
        vague={
            "d": (
                "What dish did I rave about after eating out in {month}?",
                "Which plate did I love at the new place I tried in {month}?",
            ),
            "v": ("Which restaurant did I try in {month}?",),
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
            "Cooked {v} for {s} this weekend; took all afternoon but worth it.",
        ),
        series="s",
        focus="cooking for {s}",
        all_asks=(
            "What have I cooked when hosting {s}? List every dish.",
            "Which dishes have I made for {s} so far?",
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
        vague={"v": ("What was the recipe you suggested to me in {month}?",)},
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
    # ----------------------------------------------------------------- fitness
    K(
        "race_goal",
        "fitness",
        "user",
        {"v": "race"},
        says=(
            "I signed up for the {v}, so training gets serious now.",
            "Entered the {v}! That's the goal race this year.",
        ),
        asks={"v": ("Which event am I training towards?",)},
        once=True,
        focus="my training block",
        changes="v",
        updates=(
            "Change of plan: I dropped out of the {old} and entered the {v} instead.",
            "New goal race: the {v}.",
        ),
        update_asks=("What's my goal race now?", "Which event am I preparing for these days?"),
    ),
    K(
        "race_result",
        "fitness",
        "user",
        {"k": "race", "v": "racetime"},
        says=(
            "Ran the {k} yesterday and finished in {v}!",
            "Official result from the {k}: {v}. Legs are destroyed.",
        ),
        asks={"v": ("How long did the {k} take me?",), "k": ("In which race did I clock {v}?",)},
        key="k",
        focus="race recovery",
        when=("Which race did I run in {month}?",),
        all_asks=("Which races did I run in {year}?",),
        all_slot="k",
        skip=0.6,
        vague={
            "v": (
                "What was my finishing time in the race I ran in {month}?",
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
        vague={"v": ("Which exercise did you suggest I add in {month}?",)},
        key="k",
        focus="{k}",
        alts="exercise",
        request=(
            "Something is off with {k}. What should I add to my routine?",
            "Any exercises for {k}? I have twenty minutes, three times a week.",
        ),
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
        update_asks=("What's the current savings target for {k}?",),
    ),
    K(
        "rent",
        "finance",
        "user",
        {"v": "rent"},
        says=("Our rent is {v} a month, for context.", "We pay {v} in rent every month."),
        asks={"v": ("What do we pay the landlord?",)},
        once=True,
        focus="our monthly budget",
        changes="v",
        updates=("The landlord put the rent up to {v}.", "Rent goes to {v} from next month."),
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
    ),
    K(
        "purchase",
        "finance",
        "user",
        {"v": "product", "p": "price"},
        says=("Caved and bought {v} for {p}.", "Ordered {v} last night, {p} with the discount."),
        asks={"p": ("How much did I pay for {v}?",), "v": ("What did I buy that cost {p}?",)},
        key="v",
        focus="a big purchase",
        when=("What did I splash out on in {month}?",),
        all_asks=("What bigger purchases did I make in {year}?",),
        vague={
            "p": ("How much was the big purchase I made in {month}?",),
            "v": ("What did I treat myself to in {month}?",),
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
        says=("Our grocery budget is {v} a month.", "We try to keep food shopping to {v} a month."),
        asks={"v": ("How much can we spend at the supermarket?",)},
        once=True,
        focus="the food budget",
        changes="v",
        updates=("We moved the grocery budget to {v}.", "Food shopping budget is {v} from now on."),
        update_asks=("What's the grocery budget now?",),
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
            "Post-mortem done: the {k} outage was {v}.",
            "Found it. The {k} incident came down to {v}.",
        ),
        asks={
            "v": ("What turned out to be behind the {k} incident?", "Why did {k} go down?"),
            "k": ("Which of our services went down because of {v}?",),
        },
        key="k",
        focus="the incident",
        when=("Which service had an outage in {month}?",),
        all_asks=("Which of our services had an outage in {year}?",),
        all_slot="k",
        vague={
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
        vague={"v": ("What was that Python library you recommended in {month}?",)},
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
            "Big news at work: {v} took over as my manager.",
            "Reorg again. My new manager is {v}.",
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
        update_asks=("What is my current role at work?",),
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
        says=("In the {k} review we agreed to {v}.", "Decision from the {k} meeting: {v}."),
        asks={"v": ("What's the plan for {k} after the last meeting?",)},
        key="k",
        focus="the {k} plan",
    ),
    K(
        "opener_pick",
        "work",
        "assistant",
        {"k": "part:meeting", "v": "opener"},
        says=(
            "Open {k} with **{v}**; it sets the frame before anyone else does.",
            "I would start {k} by {v}.",
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
        asks={"v": ("Which vet practice do we use for {p}?",)},
        once=True,
        focus="{p}",
        changes="v",
        updates=("We moved {p} to {v}.", "New vet for {p}: {v}."),
        update_asks=("Which clinic looks after {p} now?",),
    ),
    K(
        "vet_visit",
        "pets",
        "user",
        {"p": "cast:pet", "v": "finding"},
        says=(
            "{p} had a checkup today: the vet found {v}.",
            "Vet visit for {p}. Turns out it's {v}.",
        ),
        asks={
            "v": (
                "What health problem turned up for {p} recently?",
                "Is anything wrong with {p}, according to the last visit?",
            )
        },
        once=True,
        focus="{p}'s health",
    ),
    K(
        "pet_food",
        "pets",
        "user",
        {"p": "cast:pet", "v": "product"},
        says=("{p} eats {v} now.", "We put {p} on {v}."),
        asks={"v": ("What food is {p} on?",)},
        once=True,
        focus="feeding {p}",
        changes="v",
        updates=("{p} went off it, so we switched to {v}.", "{p}'s food is {v} now."),
        update_asks=("What do we feed {p} at the moment?",),
    ),
    K(
        "friend_dog",
        "pets",
        "other",
        {"f": "cast:friend", "b": "part:breed", "v": "petname"},
        says=("{f} adopted a {b} and called it {v}.", "{f}'s new {b} puppy is named {v}."),
        asks={"v": ("What did {f} name the new puppy?",)},
        key="f",
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
                "What was your idea for {p} and the {k}?",
            )
        },
        key="k",
        focus="{p}",
        alts="petrec",
        request=("{p} has a {k} problem. Ideas?", "How do I deal with {p}'s {k}?"),
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
        update_asks=("Which practice am I with now?",),
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
        update_asks=("What is my vitamin D dose now?",),
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
        key="k",
        focus="{k}",
        alts="habit",
        request=(
            "I've been struggling with {k}. One change you'd make?",
            "Any single habit that helps with {k}?",
        ),
    ),
    # ----------------------------------------------------------------- home
    K(
        "repair",
        "home",
        "user",
        {"k": "part:room", "v": "person", "p": "price"},
        says=(
            "{v} sorted out the leak in the {k}; {p} all in.",
            "Got a plumber in for the {k}, {v}, and it came to {p}.",
        ),
        asks={
            "v": ("Who came to deal with the water problem in the {k}?",),
            "p": ("What did the {k} repair cost us?",),
        },
        vague={
            "v": ("What was the name of the plumber we had round in {month}?",),
            "p": ("How much did the plumber charge us in {month}?",),
        },
        key="k",
        focus="the {k}",
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
        key="k",
        focus="the {k}",
        alts="homerec",
        request=(
            "The {k} is always damp and cold. What would you buy?",
            "What one thing would make the {k} more bearable in winter?",
        ),
    ),
    # ----------------------------------------------------------------- garden
    K(
        "planted",
        "garden",
        "user",
        {"s": "cast:bed", "v": "plant"},
        says=("Put {v} in {s} this weekend.", "Planted {v} in {s}."),
        series="s",
        focus="{s}",
        all_asks=("What have I planted in {s}?", "List everything I've put in {s}."),
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
    ),
    # ----------------------------------------------------------------- reading
    K(
        "book_club",
        "reading",
        "user",
        {"s": "cast:bookclub", "v": "book"},
        says=("{s} picked {v} for this month.", "This month {s} is reading {v}."),
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
        says=("Just finished {v} by {a}. Loved it.", "Finished {v}, the {a} novel."),
        asks={
            "a": ("Who wrote {v}?",),
            "v": ("Which {a} book did I finish?", "What was the {a} novel I read?"),
        },
        key="v",
        focus="what I'm reading",
        when=("What book did I finish in {month}?",),
        all_asks=("Which books did I finish in {year}?",),
        vague={
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
        asks={"p": ("Where did I see {v} play?",), "v": ("Which band did I catch at {p}?",)},
        key="v",
        focus="live music",
        when=("Which band did I see live in {month}?",),
        when_slot="v",
        all_asks=("Which bands have I seen live in {year}?",),
        vague={
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
        key="k",
        focus="reading about {k}",
        alts="book",
        request=(
            "Any novel set in {k} to read before going?",
            "What should I read on the plane to {k}?",
        ),
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
        says=("For {s}'s {o} I got {v}.", "Sorted {s}'s {o} present: {v}."),
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
        update_asks=("Which company is {f} at now?",),
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
        key="k",
        focus="{s}'s {k}",
        alts="gift",
        request=("{s}'s {k} is coming up. Gift ideas?", "What should I get {s} for the {k}?"),
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
        update_asks=("Who is my tutor now?",),
    ),
    K(
        "exam",
        "learning",
        "user",
        {"l": "part:lang", "k": "level", "v": "score"},
        says=("Passed the {l} {k} exam with {v}!", "{l} {k} result: {v}."),
        asks={"v": ("How did I do on the {l} {k} test?",)},
        key="k",
        focus="the {l} exam",
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
        key="k",
        focus="{k}",
        alts="course",
        request=(
            "I want a course for {k} this winter. One suggestion?",
            "Suggest an evening course for {k}?",
        ),
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
        vague={"v": ("Which gadget did you recommend to me in {month}?",)},
        key="k",
        focus="{k}",
        alts="product",
        request=("I need {k}. What would you buy?", "Shopping for {k}: your pick?"),
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
        key="k",
        focus="race recovery",
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
        asks={"v": ("What does {f} recommend ordering at {k}?",)},
        key="k",
        focus="eating out",
    ),
    K(
        "other_trip",
        "travel",
        "other",
        {"city": "key:trip_report", "f": "cast:friend", "v": "hotel"},
        says=(
            "{f} just got back from {city} too; they stayed at {v}.",
            "Funny, {f} was in {city} as well and booked {v}.",
        ),
        asks={"v": ("Where did {f} stay in {city}?",)},
        key="city",
        focus="the {city} trip",
    ),
    K(
        "other_purchase",
        "finance",
        "other",
        {"k": "key:purchase", "f": "cast:friend", "v": "price"},
        says=("{f} bought {k} as well, but paid {v}.", "{f} got {k} too, for {v}."),
        asks={"v": ("What did {f} pay for {k}?",)},
        key="k",
        focus="a big purchase",
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


# ---------------------------------------------------------------------------- the topics


@dataclass(frozen=True)
class Topic:
    """What an assistant answer on a topic is made of, and what the user asks about it."""

    heads: tuple[str, ...]
    lines: tuple[str, ...]  # {k}: the exchange's focus
    requests: tuple[str, ...]
    focuses: tuple[str, ...]  # the focus of an exchange that plants no fact of its own


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
        focuses=(
            "a long weekend away",
            "the summer holiday",
            "a city break",
            "travelling with hand luggage only",
            "a train trip",
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
        focuses=(
            "weeknight dinners",
            "meal prep for the week",
            "baking bread",
            "cooking for a crowd",
            "using up leftovers",
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
        focuses=(
            "my training plan",
            "getting back into running",
            "strength training",
            "recovery days",
            "stretching",
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
        focuses=(
            "our budget",
            "saving more",
            "investing for the long term",
            "paying off the credit card",
            "the household bills",
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
        focuses=(
            "flaky tests",
            "a slow endpoint",
            "our deploy pipeline",
            "error handling",
            "database migrations",
            "code review",
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
        focuses=(
            "walks in the rain",
            "pet insurance",
            "training recall",
            "grooming",
            "leaving the dog alone",
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
        focuses=(
            "my one-to-one",
            "the quarterly review",
            "too many meetings",
            "asking for a raise",
            "delegating better",
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
        focuses=(
            "sleeping badly",
            "my energy levels",
            "eye strain",
            "headaches at work",
            "posture",
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
        focuses=(
            "the boiler",
            "condensation on the windows",
            "a squeaky floor",
            "organising the garage",
            "the noisy neighbours",
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
        focuses=("the lawn", "composting", "the shed", "slugs", "the hedge"),
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
        focuses=("my reading list", "audiobooks", "a holiday read", "podcasts", "gigs this year"),
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
        focuses=(
            "the school holidays",
            "a family visit",
            "screen time",
            "keeping in touch with friends",
            "the weekend",
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
        focuses=(
            "vocabulary",
            "listening practice",
            "an online course",
            "learning an instrument",
            "exam prep",
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
        focuses=(
            "my laptop",
            "smart home stuff",
            "charging cables",
            "a new watch",
            "the family's devices",
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
NEWS = ("Oh, and news: ", "By the way, ", "Unrelated, but ", "Update: ", "Side note: ", "")


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
ALT_ASKS = (
    "Besides your top pick, which other options did you list for {focus}?",
    "What were the alternatives you mentioned when we discussed {focus}?",
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
