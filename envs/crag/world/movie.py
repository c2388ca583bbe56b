"""Movies: people, films with casts and crews, and the Oscars."""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import TYPE_CHECKING

from raleval.envs.crag.world.common import (
    GENRES,
    LANGS,
    OSCAR_CATEGORIES,
    UniqueNames,
    lookalikes,
    noise_names,
    popularity_of,
    random_name,
    random_title,
)

if TYPE_CHECKING:
    from raleval.envs.crag.world import CragWorld


def generate(w: CragWorld, rng: random.Random, n_core: int, noise: int) -> None:
    titles, pnames = UniqueNames(), UniqueNames()
    n_people = max(8, n_core * 3)
    person_ids: list[int] = []
    for i in range(n_people * (1 + noise // 3)):
        name = None
        while name is None:
            name = pnames.take(random_name(rng))
        pid = 1000 + i
        core = i < n_people
        birthday = date(rng.randint(1940, 2000), rng.randint(1, 12), rng.randint(1, 28))
        w.people[pid] = {
            "name": name,
            "id": pid,
            "birthday": birthday.isoformat(),
            "acted_movies": [],
            "directed_movies": [],
            "oscar_awards": [],
            "core": core,
        }
        w.add_node(
            f"person:{pid}",
            type="person",
            domain="movie",
            name=name,
            popularity=popularity_of(i),
            core=core,
        )
        person_ids.append(pid)
    core_people = person_ids[:n_people]
    # person look-alikes: names built from core names
    for i, pid in enumerate(core_people[: max(1, n_core // 2)]):
        for j, alt in enumerate(lookalikes(w.people[pid]["name"], "person")):
            if pnames.take(alt):
                nid = 500_000 + i * 10 + j
                w.people[nid] = {
                    **w.people[pid],
                    "name": alt,
                    "id": nid,
                    "acted_movies": [],
                    "directed_movies": [],
                    "oscar_awards": [],
                    "core": False,
                }
                w.add_node(
                    f"person:{nid}",
                    type="person",
                    domain="movie",
                    name=alt,
                    popularity="tail",
                    core=False,
                )
                person_ids.append(nid)

    next_id = 1
    all_titles: list[tuple[str, bool, int]] = []
    for i in range(n_core):
        t = None
        while t is None:
            t = titles.take(random_title(rng))
        all_titles.append((t, True, i))
        all_titles += [
            (n, False, i) for n in noise_names(rng, t, "movie", noise, random_title, titles)
        ]
    for title, core, i in all_titles:
        mid = next_id
        next_id += 1
        release = date(rng.randint(1990, 2023), rng.randint(1, 12), rng.randint(1, 28))
        pool = core_people if core else person_ids
        cast_ids = rng.sample(pool, min(len(pool), rng.randint(2, 4)))
        director = rng.choice(pool)
        rating0 = round(rng.uniform(4.0, 8.8), 1)
        w.movies[mid] = {
            "title": title,
            "id": mid,
            "release_date": release.isoformat(),
            "original_title": title,
            "original_language": rng.choice(LANGS),
            "budget": rng.randint(1, 200) * 1_000_000,
            "revenue": rng.randint(0, 900) * 1_000_000,
            # the rating drifts as votes come in: (valid_from, value) pairs
            "rating_history": [
                (release, rating0),
                (
                    release + timedelta(days=400),
                    round(min(9.5, rating0 + rng.uniform(-0.6, 0.6)), 1),
                ),
            ],
            "genres": [
                {"id": g, "name": GENRES[g]} for g in sorted(rng.sample(range(len(GENRES)), 2))
            ],
            "oscar_awards": [],
            "cast": [
                {"name": w.people[p]["name"], "id": p, "character": random_name(rng, 1), "order": k}
                for k, p in enumerate(cast_ids)
            ],
            "crew": [{"name": w.people[director]["name"], "id": director, "job": "Director"}],
            "length": rng.randint(80, 180),
            "core": core,
        }
        for p in cast_ids:
            w.people[p]["acted_movies"].append(mid)
            w.graph.add_edge(f"person:{p}", f"movie:{mid}", key="acted_in")
        w.people[director]["directed_movies"].append(mid)
        w.graph.add_edge(f"person:{director}", f"movie:{mid}", key="directed")
        w.add_node(
            f"movie:{mid}",
            type="movie",
            domain="movie",
            name=title,
            popularity=popularity_of(i),
            core=core,
        )
    # Oscars: each ceremony year picks winners among core movies released the year before
    by_year: dict[int, list[int]] = {}
    for mid, m in w.movies.items():
        if m["core"]:
            by_year.setdefault(int(m["release_date"][:4]), []).append(mid)
    for year, mids in sorted(by_year.items()):
        ceremony = year + 1
        awards = []
        for cat in OSCAR_CATEGORIES:
            mid = rng.choice(mids)
            m = w.movies[mid]
            nominee = (
                m["title"]
                if cat == "Best Picture"
                else (m["crew"][0]["name"] if cat == "Best Director" else m["cast"][0]["name"])
            )
            award = {
                "year_ceremony": ceremony,
                "year_film": year,
                "category": cat,
                "name": nominee,
                "film": m["title"],
                "winner": True,
            }
            awards.append(award)
            m["oscar_awards"].append(award)
            if cat != "Best Picture":
                pid = m["crew"][0]["id"] if cat == "Best Director" else m["cast"][0]["id"]
                w.people[pid]["oscar_awards"].append(award)
                w.graph.add_edge(f"person:{pid}", f"oscar:{ceremony}:{cat}", key="won")
        w.oscars[ceremony] = awards
