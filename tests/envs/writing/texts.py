"""Hand-written parts for two built-in tasks, from good to worthless, for ordering tests.

``TLDR`` is for post 0 (the sourdough starter, ``reset(seed=0)``); ``INTRODUCTION`` for abstract 2
(soil moisture sensing, ``reset(seed=2)`` with ``task="introduction"``). Each maps a kind of team to
the two parts, in role order; the source-copying team is built from the task itself.
"""

from __future__ import annotations

TLDR_INDEX = 0
INTRODUCTION_INDEX = 2

SPORTS_SHORT = "Our team won the regional football final after a tense penalty shootout on Saturday evening."
SPORTS_LONG = (
    "The regional football final was played on Saturday in front of a large crowd. Both teams defended "
    "well and the match stayed level through ninety minutes and extra time. In the shootout our "
    "goalkeeper saved two penalties, and our captain scored the winning kick. Fans celebrated in the "
    "streets until midnight, and the coach praised the players for their patience and discipline "
    "throughout a long season of training, travel and difficult away games."
)

TLDR: dict[str, tuple[str, str]] = {
    "good": (
        "My old sourdough starter hardly rises since moving to a colder kitchen with chlorinated water; "
        "is it the cold, the water, or dead?",
        "For two years my sourdough starter doubled reliably within about six hours of each feeding. "
        "Three weeks ago I moved across the city, and since then it has barely risen. Nothing about my "
        "routine changed: I still feed it twice a day with equal parts starter, flour and water, using "
        "the same flour as before. What did change is the environment. The new kitchen is much colder, "
        "around sixteen degrees in the morning, and the tap water has a faint smell of chlorine. The "
        "starter is clearly still alive, since it bubbles a little and smells sour, and a spoonful of rye "
        "flour made no difference. So I am wondering whether the low temperature or the treated water is "
        "slowing the yeast down, and whether I should try to revive it or simply start a new one.",
    ),
    "off_topic": (SPORTS_SHORT, SPORTS_LONG),
    "repeated": ("starter " * 20, "starter " * 120),
    "empty": ("", ""),
}

INTRODUCTION: dict[str, tuple[str, str]] = {
    "good": (
        "Most smallholder farmers decide when to irrigate by looking at the crop and the soil surface, "
        "because the commercial probes that measure soil moisture cost more than a month of their income. "
        "Watering by eye wastes scarce water in dry seasons and stresses plants when the guess is wrong. "
        "Low-power radios and cheap capacitive sensors now make it possible to measure moisture "
        "continuously, but it is not known whether such inexpensive hardware is accurate enough across "
        "soil types, lasts a whole growing season, and actually changes how farmers irrigate.",
        "This paper presents a soil moisture sensor node that costs eleven dollars in parts, built from a "
        "capacitive probe, a microcontroller and a long-range radio. A solar gateway shared by each village "
        "collects hourly readings and sends farmers a phone message when irrigation is due. We calibrate "
        "the probe for three soil types, deploy sixty nodes on twenty farms for two seasons, and show that "
        "readings track lab measurements closely, that batteries last a season, and that farms following "
        "the advice save a quarter of their water without losing maize yield.",
    ),
    "off_topic": (
        "Jazz emerged in New Orleans at the start of the twentieth century, blending blues, ragtime and "
        "brass band traditions. Musicians improvised over shared chord progressions, and dance halls gave "
        "them an audience eager for new rhythms. Recording technology soon carried the style to Chicago "
        "and New York, where big bands grew popular.",
        "This essay follows three trumpet players through the swing era and argues that touring schedules "
        "shaped their solos. We compare live broadcasts with studio takes and show that improvised "
        "passages grew longer when bands played for dancers rather than radio audiences.",
    ),
    "repeated": ("soil " * 80, "moisture " * 60),
    "empty": ("", ""),
}
