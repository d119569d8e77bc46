"""Built-in TL;DR tasks: short forum posts with reference summaries, in the TL;DR record format.

The posts and summaries were written for this package (no dataset text). Each record is a
``{"prompt", "completion"}`` dict exactly like a ``trl-lib/tldr`` row, so the built-in tasks go
through the same parser as user records.
"""

from __future__ import annotations


def _prompt(subreddit: str, title: str, post: str) -> str:
    return f"SUBREDDIT: r/{subreddit}\n\nTITLE: {title}\n\nPOST: {' '.join(post.split())}\n\nTL;DR:"


#: Twelve posts, each with a reference TL;DR.
POSTS: tuple[dict[str, str], ...] = (
    {
        "prompt": _prompt(
            "Breadbaking",
            "My sourdough starter stopped rising after I moved to a new flat",
            """I have kept the same sourdough starter for two years and it always doubled within six
            hours of feeding. Three weeks ago I moved to a flat on the other side of the city and since
            then it barely rises at all. I feed it the same flour at the same ratio, one part starter
            to one part flour and one part water, twice a day. The new kitchen is noticeably colder,
            maybe sixteen degrees in the morning, and the tap water here smells a little of chlorine.
            The starter still bubbles a bit and smells sour, so I do not think it is dead. I tried
            adding a spoon of rye flour once but nothing changed. Is it the cold, the water, or should I
            just start again from scratch?""",
        ),
        "completion": "My two-year-old sourdough starter barely rises since I moved to a colder flat "
        "with chlorinated tap water; is it the temperature, the water, or is it ruined?",
    },
    {
        "prompt": _prompt(
            "personalfinance",
            "Pay off my car loan early or build an emergency fund first?",
            """I am twenty six and just got a raise, so I now have about four hundred dollars a month
            left over after rent, food and bills. I still owe six thousand dollars on my car at a
            rate of five percent, with three years left on the loan. My savings account holds only
            nine hundred dollars, which would not cover much if I lost my job or needed a big repair.
            My dad says debt is always the first thing to kill, but a coworker told me to save three
            months of expenses before paying anything extra on a loan with such a low rate. My job feels
            stable but my company did lay off a few people last spring. Which should come first?""",
        ),
        "completion": "I have $400 a month spare, a $6k car loan at 5% and only $900 saved; should "
        "I build an emergency fund before paying the loan off early?",
    },
    {
        "prompt": _prompt(
            "relationships",
            "My roommate (24F) keeps paying her share of the utilities late and I (25F) cover it",
            """My roommate and I have shared an apartment for a year. The electricity, internet and
            water bills are in my name, and we agreed to split them evenly at the start of each month.
            For the last four months she has paid her half two or three weeks late, and twice I had to
            cover the whole bill so we would not be charged a fee. When I bring it up she apologises,
            says money is tight until her next paycheck, and then the same thing happens again. I like
            her as a person and we get along well otherwise, but I am starting to resent her and I
            cannot afford to keep lending her money. How do I bring this up without ruining things?""",
        ),
        "completion": "My roommate has paid her half of the bills weeks late for four months and I keep "
        "covering her; how do I raise it without hurting our friendship?",
    },
    {
        "prompt": _prompt(
            "gardening",
            "Lower leaves on my tomato plants are turning yellow",
            """This is my first year growing tomatoes. I have six plants in large pots on a sunny
            balcony and they were doing great until last week. Now the lowest leaves on four of the
            plants are turning yellow, starting at the edges, and a few have brown spots in the middle.
            The top of the plants still looks green and healthy and there are small green fruits
            forming. I water every morning until water runs out of the bottom of the pots, and I have
            not fertilised since I planted them two months ago. We had a week of heavy rain recently
            as well. Is this a disease I need to treat, or are the plants just hungry?""",
        ),
        "completion": "The lower leaves of my potted tomatoes are yellowing with brown spots after heavy "
        "rain and no feeding for two months; disease or lack of nutrients?",
    },
    {
        "prompt": _prompt(
            "running",
            "Knee pain since I increased my weekly mileage for a half marathon",
            """I started running last year and I am training for my first half marathon in ten weeks.
            Until a month ago I ran about fifteen kilometres a week with no problems. Following a plan
            I found online, I jumped to thirty kilometres a week and added a long run on Sundays. Now
            the outside of my right knee hurts after about five kilometres, a sharp pain that stops
            when I walk. It does not hurt at rest or on stairs. My shoes are almost two years old. I
            really do not want to lose fitness before the race, but I also do not want to make it worse.
            Should I rest, see a physio, or just buy new shoes and keep going?""",
        ),
        "completion": "After doubling my weekly running distance for a half marathon, the outside of my "
        "knee hurts during runs; should I rest, see a physio or change shoes?",
    },
    {
        "prompt": _prompt(
            "CatAdvice",
            "Cat stopped using the litter box after I switched litter brands",
            """My cat is seven years old and has never had an accident in the house. Last week my usual
            clay litter was out of stock, so I bought a pine pellet litter that was on sale. Since the
            switch she has peed on the bath mat three times and once on a pile of laundry. She still
            goes into the box and sniffs around, but then she leaves. She is eating and drinking
            normally and seems happy otherwise. I have cleaned the spots with an enzyme cleaner. I
            would rather keep the new litter because it is cheaper and smells less, but I cannot keep
            washing bath mats. Is it definitely the litter, and how do I get her back to the box?""",
        ),
        "completion": "My cat started peeing outside her box right after I switched from clay to pine "
        "litter; is the litter the cause and how do I get her to use the box again?",
    },
    {
        "prompt": _prompt(
            "learnprogramming",
            "I have finished five beginner courses but cannot build anything on my own",
            """Over the past eight months I have completed five online courses on Python and web
            development. While following along, everything makes sense and I can finish the exercises.
            But when I open an empty editor to build my own project, like a simple budget tracker, I
            freeze. I do not know where to start, how to split the program into pieces, or which
            libraries to use, so I end up starting yet another course. I have read that this is called
            tutorial hell. I have a full time job, so I can only study in the evenings. How did you
            break out of this and start writing programs without someone guiding every step?""",
        ),
        "completion": "After eight months and five programming courses I still freeze when starting a "
        "project of my own; how do I escape tutorial hell?",
    },
    {
        "prompt": _prompt(
            "travel",
            "Missed my connection and the airline rebooked me two days later",
            """My first flight from Lisbon landed ninety minutes late because of a technical problem,
            so I missed my connection in Frankfurt to Toronto. The airline desk rebooked me on a
            flight that leaves two days later, which means I will miss the first two days of my
            sister's wedding week. They gave me a voucher for one night at an airport hotel and a meal
            voucher of twelve euros. I asked about flights with partner airlines and the agent said
            there were none available, but I can see seats on the website of another airline leaving
            tomorrow. Both flights were on one ticket. What am I entitled to, and can I make them put
            me on the earlier flight?""",
        ),
        "completion": "A delayed first flight made me miss my connection and the airline rebooked me two "
        "days later with one hotel night; what are my rights, and can I demand an earlier flight?",
    },
    {
        "prompt": _prompt(
            "bikecommuting",
            "Is it realistic to keep commuting by bike through the winter?",
            """I started cycling to work in April and I love it. The ride is twelve kilometres each
            way, mostly on a bike path along the river, and I have saved a lot on bus fares. Now
            autumn is here and people at work say I will have to stop soon. Where I live the winter
            brings a few weeks of snow, many days just above freezing with rain, and it is dark at
            both ends of the day. My bike is a basic hybrid with rim brakes and no mudguards. I do not
            mind being a bit cold, but I want to stay safe. What equipment do I actually need, and is
            winter riding worth it or should I take the bus until spring?""",
        ),
        "completion": "I bike twelve kilometres to work and want to keep going through a dark, wet and "
        "sometimes snowy winter; what gear do I need, and is it worth it?",
    },
    {
        "prompt": _prompt(
            "jobs",
            "Higher paying offer but the commute would triple",
            """I have worked as a lab technician for three years. My current job is a fifteen minute
            walk from home, my manager is supportive, and I can leave early on Fridays. Yesterday I got
            an offer from a larger company for a similar role that pays twenty percent more and comes
            with better training and a clearer path to a senior position. The catch is the commute:
            about forty five minutes each way by train, with no option to work from home because the
            work is in the lab. I have no kids and I do not mind reading on trains, but I worry about
            burning out. How do I decide?""",
        ),
        "completion": "I was offered 20% more pay and better career growth, but the commute would go "
        "from a 15-minute walk to 45 minutes by train each way; how should I decide?",
    },
    {
        "prompt": _prompt(
            "HomeImprovement",
            "Mold on the bathroom ceiling even though the fan runs every shower",
            """Our bathroom has no window, so we run the extractor fan during every shower and for a
            while afterwards. Despite this, black spots of mold keep appearing on the ceiling above the
            shower, and the paint has started to bubble. I held a sheet of toilet paper up to the fan
            and it barely moves, so I suspect the fan is not pulling much air. The house is about
            forty years old and I have no idea where the duct goes. I cleaned the mold with a bleach
            spray twice, but it returns within a month. Should I replace the fan, check the duct, or
            is there something else I am missing?""",
        ),
        "completion": "Mold keeps returning on my windowless bathroom's ceiling and the extractor fan "
        "barely pulls air; should I replace the fan or look at the duct?",
    },
    {
        "prompt": _prompt(
            "Parenting",
            "Bedtime with our three year old takes two hours every night",
            """Our son turned three in the summer, and since then bedtime has become a battle. We do
            the same routine every night: bath, pyjamas, two books and a song, lights out at half past
            seven. Then he asks for water, then the toilet, then another hug, then he appears in the
            living room again. Most nights he falls asleep after nine and he is grumpy in the morning.
            We have tried ignoring him, which leads to crying, and staying in the room, which works
            but takes an hour. He gave up his afternoon nap at daycare a month ago. We are exhausted
            and have no evenings left. What worked for you?""",
        ),
        "completion": "Our three-year-old keeps getting up after lights out and bedtime now takes two "
        "hours despite a steady routine; how do we fix it?",
    },
)
