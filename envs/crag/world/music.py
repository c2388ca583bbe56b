"""Music: artists and bands, songs, the weekly Billboard chart and the Grammys."""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import TYPE_CHECKING

from raleval.envs.crag.world.common import (
    CITIES,
    COUNTRIES,
    END,
    NOUNS,
    WORDS,
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
    anames, snames = UniqueNames(), UniqueNames()

    def band_name(r: random.Random) -> str:
        if r.random() < 0.5:
            return f"The {r.choice(WORDS)} {random_name(r, 1)}s"
        return random_name(r)

    entries: list[tuple[str, bool, int]] = []
    so_far: list[str] = []  # artists generated so far, in order
    for i in range(n_core):
        a = None
        while a is None:
            a = anames.take(band_name(rng))
        entries.append((a, True, i))
        entries += [(n, False, i) for n in noise_names(rng, a, "artist", noise, band_name, anames)]
    for name, core, i in entries:
        is_band = name.startswith("The ") or rng.random() < 0.3
        start = rng.randint(1960, 2015)
        ended = start + rng.randint(3, 30) if rng.random() < 0.3 else None
        members: list[tuple[date, str | None, str]] = []  # (joined, left, member)
        if is_band:
            for _ in range(rng.randint(3, 5)):
                joined = date(start, 1, 1)
                left = None
                if rng.random() < 0.3:
                    left = date(start + rng.randint(1, 8), 6, 1)
                members.append((joined, left.isoformat() if left else None, random_name(rng)))
        so_far.append(name)
        w.artists[name] = {
            "name": name,
            "is_band": is_band,
            "birth_place": rng.choice(CITIES),
            "birth_date": None
            if is_band
            else date(
                start - rng.randint(18, 30), rng.randint(1, 12), rng.randint(1, 28)
            ).isoformat(),
            "lifespan": [str(start), str(ended) if ended else None],
            "members": members,
            "works": [],
            "core": core,
        }
        w.add_node(
            f"artist:{name}",
            type="artist",
            domain="music",
            name=name,
            popularity=popularity_of(i),
            core=core,
        )
        for member in members:
            w.graph.add_edge(f"person:{member[2]}", f"artist:{name}", key="member_of")
        for k in range(rng.randint(2, 4)):
            s = None
            while s is None:
                s = snames.take(random_title(rng))
            released = date(
                max(start, 1990) + rng.randint(0, 8), rng.randint(1, 12), rng.randint(1, 28)
            )
            song = {
                "name": s,
                "artist": name,
                "author": random_name(rng) if rng.random() < 0.5 else name,
                "release_country": rng.choice(COUNTRIES),
                "release_date": released.isoformat(),
                "core": core and k == 0,
            }
            w.songs[s] = song
            w.artists[name]["works"].append(s)
            w.graph.add_edge(f"artist:{name}", f"song:{s}", key="performed")
            w.add_node(
                f"song:{s}",
                type="song",
                domain="music",
                name=s,
                popularity=popularity_of(i),
                core=song["core"],
            )
            if song["core"]:
                for alt in lookalikes(s, "song")[: max(1, noise // 10)]:
                    if snames.take(alt):
                        w.songs[alt] = {
                            **song,
                            "name": alt,
                            "artist": rng.choice(so_far),
                            "core": False,
                        }
                        w.artists[w.songs[alt]["artist"]]["works"].append(alt)
                        w.add_node(
                            f"song:{alt}",
                            type="song",
                            domain="music",
                            name=alt,
                            popularity="tail",
                            core=False,
                        )
    # weekly Billboard Hot 100 (top 10 here) from 2023-01-07 on, Saturdays
    songs = sorted(w.songs)
    standing = rng.sample(songs, min(10, len(songs)))
    history: dict[str, dict[str, int]] = {}
    week = date(2023, 1, 7)
    last: dict[str, int] = {}
    while week <= END:
        if rng.random() < 0.5:
            standing[rng.randrange(len(standing))] = rng.choice(songs)
            standing = list(dict.fromkeys(standing))
            while len(standing) < min(10, len(songs)):
                cand = rng.choice(songs)
                if cand not in standing:
                    standing.append(cand)
        rng.shuffle(standing) if rng.random() < 0.3 else None
        chart = []
        for rank, s in enumerate(standing, 1):
            h = history.setdefault(s, {"weeks": 0, "peak": rank})
            h["weeks"] += 1
            h["peak"] = min(h["peak"], rank)
            chart.append(
                {
                    "rank": rank,
                    "song": s,
                    "artist": w.songs[s]["artist"],
                    "rank_last_week": last.get(s),
                    "weeks_in_chart": h["weeks"],
                    "top_position": h["peak"],
                }
            )
        last = {s: r for r, s in enumerate(standing, 1)}
        w.charts[week] = chart
        week += timedelta(days=7)
    # Grammys
    core_artists = [a for a, v in w.artists.items() if v["core"]]
    core_songs = [s for s, v in w.songs.items() if v["core"]]
    for year in range(2000, 2025):
        w.grammys[year] = {
            "best_new_artist": rng.choice(core_artists),
            "song_of_the_year": rng.choice(core_songs),
            "album_of_the_year": f"{rng.choice(WORDS)} {rng.choice(NOUNS)}",
        }
        w.grammys[year]["album_artist"] = rng.choice(core_artists)
