"""The document collection that ships with the package: short encyclopedia entries on invented subjects.

The subjects are made up so that a model cannot know the answers without searching. Each entry may
carry ``questions`` (answered by a fact stated in its text) and ``facts`` (a number stated in its
text, with a phrase naming it) from which the task generator builds lookup tasks.
"""

from __future__ import annotations

from typing import Any


def _entry(
    id: str,
    title: str,
    text: str,
    questions: list[tuple[str, str]] | None = None,
    facts: list[tuple[str, int]] | None = None,
) -> dict[str, Any]:
    return {
        "id": id,
        "title": title,
        "text": text,
        "questions": [{"question": q, "answer": a} for q, a in questions or []],
        "facts": [{"phrase": p, "value": v} for p, v in facts or []],
    }


BUILTIN_DOCUMENTS: tuple[dict[str, Any], ...] = (
    _entry(
        "varrow-lighthouse",
        "Varrow Lighthouse",
        "The Varrow Lighthouse stands on the northern cape of the Isle of Varrow. It was completed in 1847 "
        "by the engineer Matilda Crane, and its lamp can be seen from 31 kilometres away. The tower is "
        "painted in red and white bands.",
        [("Which engineer built the Varrow Lighthouse?", "Matilda Crane")],
        [("the year the Varrow Lighthouse was completed", 1847)],
    ),
    _entry(
        "mount-orrin",
        "Mount Orrin",
        "Mount Orrin is the highest peak of the Teskel Range, rising 3412 metres above sea level. Its first "
        "recorded ascent was made in 1911 by a team led by Ivo Landry. The glacier on its northern face "
        "feeds the Pale River.",
        [
            ("Which river is fed by the glacier of Mount Orrin?", "Pale River"),
            ("Who led the first recorded ascent of Mount Orrin?", "Ivo Landry"),
        ],
        [("the height of Mount Orrin in metres", 3412)],
    ),
    _entry(
        "glimmerfin-trout",
        "Glimmerfin trout",
        "The glimmerfin trout is a freshwater fish found only in Lake Sorrel. Adults grow to about 38 "
        "centimetres and feed mainly on caddisfly larvae. Its scales reflect a faint violet colour.",
        [
            ("In which lake is the glimmerfin trout found?", "Lake Sorrel"),
            ("What colour do the scales of the glimmerfin trout reflect?", "violet"),
        ],
        [("the adult length of the glimmerfin trout in centimetres", 38)],
    ),
    _entry(
        "quillon-engine",
        "Quillon engine",
        "The Quillon engine is a two-stroke steam engine designed by Hester Quillon in 1872. It powered the "
        "first ferries on the Adder Strait and had a rated output of 46 horsepower.",
        [("Which strait did the first ferries powered by the Quillon engine cross?", "Adder Strait")],
        [("the rated output of the Quillon engine in horsepower", 46)],
    ),
    _entry(
        "university-of-brannock",
        "University of Brannock",
        "The University of Brannock was founded in 1503 in the river town of Brannock. Its motto is "
        "'Light through labour' and its colours are green and silver. The university library is called "
        "the Oswin Library.",
        [("What is the name of the University of Brannock's library?", "Oswin Library")],
        [("the year the University of Brannock was founded", 1503)],
    ),
    _entry(
        "lantern-night",
        "Lantern Night of Tesk",
        "Lantern Night is a festival held in the town of Tesk on the first full moon of autumn. Residents "
        "float paper lanterns on the Millbrook canal, and the festival has been held every year since 1764.",
        [("On which canal are paper lanterns floated during Lantern Night in Tesk?", "Millbrook canal")],
        [("the year since which Lantern Night in Tesk has been held every year", 1764)],
    ),
    _entry(
        "corvid-codex",
        "Corvid Codex",
        "The Corvid Codex is an illuminated manuscript of 212 pages kept at the Abbey of Saint Elric. It is "
        "written in iron-gall ink and contains the earliest known map of the Harrow Marshes.",
        [
            ("Where is the Corvid Codex kept?", "Abbey of Saint Elric"),
            ("The Corvid Codex contains the earliest known map of which place?", "Harrow Marshes"),
        ],
        [("the number of pages of the Corvid Codex", 212)],
    ),
    _entry(
        "amberline-railway",
        "Amberline Railway",
        "The Amberline Railway connects the ports of Calder and Wessing over a distance of 287 kilometres. "
        "It opened in 1898 and was the first line in the region to use electric signalling.",
        [("What was the Amberline Railway the first line in its region to use?", "electric signalling")],
        [("the length of the Amberline Railway in kilometres", 287)],
    ),
    _entry(
        "selka-moth",
        "Selka moth",
        "The Selka moth is a nocturnal moth with a wingspan of 52 millimetres. Its caterpillars feed only on "
        "the leaves of the blue alder. The species was first described by the naturalist Oren Pell.",
        [
            ("On the leaves of which tree do Selka moth caterpillars feed?", "blue alder"),
            ("Which naturalist first described the Selka moth?", "Oren Pell"),
        ],
        [("the wingspan of the Selka moth in millimetres", 52)],
    ),
    _entry(
        "dravik-gambit",
        "Dravik's gambit",
        "Dravik's gambit is a chess opening named after the player Anselm Dravik, who used it to win the "
        "1931 Lowland Championship. In the main line Black sacrifices a knight on the sixth move.",
        [
            ("Which chess piece does Black sacrifice in Dravik's gambit?", "knight"),
            ("Which championship did Anselm Dravik win with Dravik's gambit?", "Lowland Championship"),
        ],
    ),
    _entry(
        "halvard-bridge",
        "Halvard Bridge",
        "The Halvard Bridge is a stone arch bridge over the river Tamsel. It has 9 arches and a total length "
        "of 164 metres, and was completed in 1652 after eleven years of construction.",
        [("Which river does the Halvard Bridge cross?", "Tamsel")],
        [("the total length of the Halvard Bridge in metres", 164)],
    ),
    _entry(
        "nerith-language",
        "Nerith language",
        "Nerith is a language spoken by about 4000 people in the valleys of the Oskar Hills. It has 27 "
        "consonants, and its script, called Tavel, is written from right to left.",
        [("What is the script of the Nerith language called?", "Tavel")],
        [("the number of consonants in the Nerith language", 27)],
    ),
    _entry(
        "kestrel-ridge-observatory",
        "Kestrel Ridge Observatory",
        "Kestrel Ridge Observatory sits at an altitude of 2210 metres. Its main telescope has a mirror 3.6 "
        "metres across and was used to discover the comet Halloway-Breck in 1987.",
        [
            (
                "Which comet was discovered with the main telescope of Kestrel Ridge Observatory?",
                "Halloway-Breck",
            )
        ],
        [("the altitude of Kestrel Ridge Observatory in metres", 2210)],
    ),
    _entry(
        "treaty-of-lindmere",
        "Treaty of Lindmere",
        "The Treaty of Lindmere was signed in 1689 by the duchies of Arden and Coll. It ended a dispute over "
        "fishing rights in the Grey Sound and created a joint council of 12 members.",
        [("Fishing rights in which waters were settled by the Treaty of Lindmere?", "Grey Sound")],
        [("the number of members of the joint council created by the Treaty of Lindmere", 12)],
    ),
    _entry(
        "mardel-clock",
        "Mardel Clock",
        "The Mardel Clock in the town square of Fenwick strikes 13 times at noon. It was built by the "
        "clockmaker Pia Mardel in 1733 and has a single hand.",
        [
            ("How many times does the Mardel Clock strike at noon?", "13"),
            ("In which town square does the Mardel Clock stand?", "Fenwick"),
        ],
    ),
    _entry(
        "thornwick-honey",
        "Thornwick honey",
        "Thornwick honey is produced from the nectar of the heather that grows on Thornwick Moor. It is dark "
        "amber in colour, and a protected designation since 1996 requires at least 80 percent heather nectar.",
        [("From the nectar of which plant is Thornwick honey produced?", "heather")],
        [("the minimum percentage of heather nectar required in Thornwick honey", 80)],
    ),
    _entry(
        "calyx-cipher",
        "Calyx cipher",
        "The Calyx cipher is a substitution cipher invented by the cryptographer Lena Voss in 1919. It uses "
        "a key word of seven letters and was broken in 1924 by the mathematician Ezra Holm.",
        [
            ("Which mathematician broke the Calyx cipher?", "Ezra Holm"),
            ("Which cryptographer invented the Calyx cipher?", "Lena Voss"),
        ],
        [("the year the Calyx cipher was broken", 1924)],
    ),
    _entry(
        "marrowby-cheese",
        "Marrowby cheese",
        "Marrowby is a hard cheese made from sheep's milk in the village of Marrowby. Each wheel is aged for "
        "14 months in limestone caves and is rubbed with juniper ash.",
        [
            ("Marrowby cheese is made from the milk of which animal?", "sheep"),
            ("What is each wheel of Marrowby cheese rubbed with?", "juniper ash"),
        ],
        [("the number of months a wheel of Marrowby cheese is aged", 14)],
    ),
    _entry(
        "oreth",
        "Oreth (sunken city)",
        "Oreth is a sunken city lying 18 metres below the surface of Lake Viran. Divers found it in 1964, "
        "and its best-preserved building is a round temple with 16 columns.",
        [("In which lake does the sunken city of Oreth lie?", "Lake Viran")],
        [("the number of columns of the round temple of Oreth", 16)],
    ),
    _entry(
        "bellwether-prize",
        "Bellwether Prize",
        "The Bellwether Prize is awarded every two years for a first novel written in the Coll dialect. The "
        "first winner, in 1978, was Rosamund Ake for the novel 'The Salt Orchard'.",
        [
            ("Who was the first winner of the Bellwether Prize?", "Rosamund Ake"),
            ("Which novel won the first Bellwether Prize?", "The Salt Orchard"),
        ],
    ),
    _entry(
        "cinder-goat",
        "Cinder goat",
        "The cinder goat is a breed of domestic goat from the volcanic island of Ysk. It has a dark grey "
        "coat, and a healthy adult weighs about 41 kilograms.",
        [("From which volcanic island does the cinder goat come?", "Ysk")],
        [("the weight of an adult cinder goat in kilograms", 41)],
    ),
    _entry(
        "harlan-canal",
        "Harlan Canal",
        "The Harlan Canal links the river Oune to the harbour of Pellan. It is 58 kilometres long and has "
        "23 locks; it was dug between 1790 and 1801.",
        [("Which harbour does the Harlan Canal lead to?", "Pellan")],
        [("the number of locks on the Harlan Canal", 23)],
    ),
    _entry(
        "ferrand-violin",
        "Ferrand violin",
        "The Ferrand violin was made in 1711 by the luthier Jacques Ferrand from maple and spruce. It is "
        "played today by the soloist Mira Sandoval.",
        [("Which soloist plays the Ferrand violin today?", "Mira Sandoval")],
        [("the year the Ferrand violin was made", 1711)],
    ),
    _entry(
        "quorra-sort",
        "Quorra sort",
        "Quorra sort is a sorting algorithm published by Tomas Quorra in 1968. It divides the input into "
        "runs of 32 elements and merges them in pairs. It is stable and uses linear extra memory.",
        [("Into runs of how many elements does Quorra sort divide its input?", "32")],
        [("the year Quorra sort was published", 1968)],
    ),
    _entry(
        "whistling-dunes",
        "Whistling Dunes",
        "The Whistling Dunes lie in the Amar desert and make a low humming sound when the wind blows from "
        "the east. The tallest dune is 96 metres high.",
        [("In which desert do the Whistling Dunes lie?", "Amar")],
        [("the height of the tallest of the Whistling Dunes in metres", 96)],
    ),
    _entry(
        "order-of-the-red-kite",
        "Order of the Red Kite",
        "The Order of the Red Kite is a society of falconers founded in 1580 in the city of Veldt. Members "
        "wear a brass ring engraved with a kite, and the order admits at most 60 members.",
        [("In which city was the Order of the Red Kite founded?", "Veldt")],
        [("the largest number of members the Order of the Red Kite admits", 60)],
    ),
    _entry(
        "hollin-tea",
        "Hollin tea",
        "Hollin tea is brewed from the dried leaves of the hollin shrub, which grows on the slopes of the "
        "Caddow Hills. It is steeped for 4 minutes and traditionally served with a slice of quince.",
        [
            ("Which fruit is hollin tea traditionally served with?", "quince"),
            ("On the slopes of which hills does the hollin shrub grow?", "Caddow Hills"),
        ],
    ),
    _entry(
        "aldous-glider",
        "Aldous glider",
        "The Aldous glider was a single-seat glider built by the brothers Niall and Ewan Aldous. In 1903 it "
        "flew 312 metres across the Brisk Downs, a regional record at the time.",
        [("Across which downs did the Aldous glider make its record flight?", "Brisk Downs")],
        [("the distance of the record flight of the Aldous glider in metres", 312)],
    ),
    _entry(
        "morrow-street-orchestra",
        "Morrow Street Orchestra",
        "The Morrow Street Orchestra is a chamber orchestra of 34 musicians based in Calder. Its founding "
        "conductor was Ilse Brandt, and it performs every winter in the Glass Hall.",
        [
            ("Who was the founding conductor of the Morrow Street Orchestra?", "Ilse Brandt"),
            ("In which hall does the Morrow Street Orchestra perform every winter?", "Glass Hall"),
        ],
        [("the number of musicians in the Morrow Street Orchestra", 34)],
    ),
    _entry(
        "veyrite",
        "Veyrite",
        "Veyrite is a rare blue mineral first found in the Cold Hollow mine. It has a hardness of 6 on the "
        "Mohs scale and glows green under ultraviolet light.",
        [
            ("In which mine was veyrite first found?", "Cold Hollow"),
            ("What colour does veyrite glow under ultraviolet light?", "green"),
        ],
    ),
    _entry(
        "fennick",
        "Fennick (board game)",
        "Fennick is a board game for two players on a hexagonal board of 61 cells. Each player starts with 9 "
        "stones, and a player wins by surrounding the opponent's crown stone.",
        [("How many stones does each player start with in Fennick?", "9")],
        [("the number of cells on a Fennick board", 61)],
    ),
    _entry(
        "greywater-dam",
        "Greywater Dam",
        "The Greywater Dam holds back the river Sallow to form the Greywater Reservoir. The dam is 71 metres "
        "tall and supplies drinking water to the city of Orm.",
        [("Which city gets its drinking water from the Greywater Dam?", "Orm")],
        [("the height of the Greywater Dam in metres", 71)],
    ),
    _entry(
        "the-ninth-harvest",
        "The Ninth Harvest (painting)",
        "The Ninth Harvest is an oil painting by Clara Tobin, completed in 1884. It shows farm workers at "
        "dusk and hangs in the Wexmoor Gallery.",
        [
            ("Who painted The Ninth Harvest?", "Clara Tobin"),
            ("In which gallery does The Ninth Harvest hang?", "Wexmoor Gallery"),
        ],
        [("the year The Ninth Harvest was completed", 1884)],
    ),
    _entry(
        "sparrowhawk-ship",
        "Sparrowhawk (ship)",
        "The Sparrowhawk was a three-masted trading ship launched in 1821. She carried spices between ports "
        "of the southern sea and sank in a storm in 1836 with a cargo of cloves.",
        [("What cargo was the Sparrowhawk carrying when she sank?", "cloves")],
        [("the year the trading ship Sparrowhawk sank", 1836)],
    ),
    _entry(
        "orvins-law",
        "Orvin's law",
        "Orvin's law, stated by the physicist Dag Orvin in 1902, says that the glow of a heated filament "
        "doubles for every 40 degrees of temperature rise. It was later shown to hold only between 600 and "
        "900 degrees.",
        [("Which physicist stated Orvin's law?", "Dag Orvin")],
        [("the temperature rise in degrees that doubles the glow according to Orvin's law", 40)],
    ),
    _entry(
        "stell-bread",
        "Stell bread",
        "Stell bread is a rye loaf from the town of Hobb, baked with caraway seeds and a crust glazed with "
        "beer. It is traditionally eaten on the feast of Saint Anwen.",
        [
            ("What is the crust of Stell bread glazed with?", "beer"),
            ("Which seeds are baked into Stell bread?", "caraway"),
        ],
    ),
    _entry(
        "kappel-tunnel",
        "Kappel Tunnel",
        "The Kappel Tunnel carries a road under the Vorn Pass. It is 6 kilometres long, opened in 1964, and "
        "has 11 emergency shelters.",
        [("Under which pass does the Kappel Tunnel run?", "Vorn Pass")],
        [("the number of emergency shelters in the Kappel Tunnel", 11)],
    ),
    _entry(
        "irisel-opera",
        "Irisel (opera)",
        "Irisel is an opera in three acts by the composer Tamsin Rook, first performed in 1912. It tells the "
        "story of a glassblower who falls in love with a river spirit.",
        [
            ("Which composer wrote the opera Irisel?", "Tamsin Rook"),
            ("What is the trade of the hero of the opera Irisel?", "glassblower"),
        ],
        [("the year the opera Irisel was first performed", 1912)],
    ),
    _entry(
        "wren-islands",
        "Wren Islands",
        "The Wren Islands are an archipelago of 17 small islands. Only the largest island, Tarn, is "
        "inhabited, with a population of about 300.",
        [("Which of the Wren Islands is inhabited?", "Tarn")],
        [("the number of islands in the Wren Islands archipelago", 17)],
    ),
)
