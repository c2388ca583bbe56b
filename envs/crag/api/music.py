"""Music domain: artists, songs, the Billboard Hot 100 and the Grammys."""

from __future__ import annotations

from datetime import date
from typing import Any

from raleval.environment import ToolMisuse, ToolSpec
from raleval.envs.crag.api.common import (
    ArtistParams,
    BandParams,
    BillboardAttrParams,
    Params,
    QueryParams,
    RankDateParams,
    SongParams,
    YearParams,
    parse_date,
    parse_year,
    search,
    search_ids,
    specs,
)
from raleval.envs.crag.world import BILLBOARD_ATTRIBUTES, CragWorld


def tools(w: CragWorld, as_of: date) -> list[ToolSpec]:
    """This domain's endpoints over ``w`` as of ``as_of``."""

    def artist(name: str) -> dict[str, Any] | None:
        key = w.artist_key.get(name.strip().casefold())
        return None if key is None else w.artists[key]

    def song(name: str) -> dict[str, Any] | None:
        key = w.song_key.get(name.strip().casefold())
        s = None if key is None else w.songs[key]
        return s if s is not None and s["release_date"] <= as_of.isoformat() else None

    def charts_until_now() -> dict[str, list[dict[str, Any]]]:
        return {wk.isoformat(): chart for wk, chart in w.charts.items() if wk <= as_of}

    def music_search_artist_entity_by_name(query: str) -> list[str]:
        return search(w.artist_index, query)

    today = int(as_of.strftime("%Y%m%d"))

    def music_search_song_entity_by_name(query: str) -> list[str]:
        released = w.song_released
        if released is None:  # an index folder saved without release dates: read the records
            return [s for s in search(w.song_index, query) if song(s) is not None]
        names = w.song_index[1]
        return [names[i] for i in search_ids(w.song_index, query) if released[i] <= today]

    def music_get_billboard_rank_date(rank: int, date: str | None = None) -> list[Any]:
        # CRAG: [[songs], [artists]] at ``rank`` on the chart dated exactly ``date`` (empty
        # lists for a date without a chart), or at that rank on every chart without a date;
        # [None, None] for a rank no chart has.
        charts = charts_until_now()
        if not any(e["rank"] == rank for chart in charts.values() for e in chart):
            return [None, None]
        if date is not None:
            parse_date(date)
            charts = {date: charts[date]} if date in charts else {}
        hits = [e for chart in charts.values() for e in chart if e["rank"] == rank]
        return [[e["song"] for e in hits], [e["artist"] for e in hits]]

    def music_get_billboard_attributes(date: str, attribute: str, song_name: str) -> str | None:
        # CRAG: the attribute as the chart prints it (a string; "-" for a new entry's
        # rank_last_week) of the song on the chart dated exactly ``date``.
        if attribute not in BILLBOARD_ATTRIBUTES:
            raise ToolMisuse(f"attribute must be one of {', '.join(BILLBOARD_ATTRIBUTES)}")
        parse_date(date)
        for entry in charts_until_now().get(date, ()):
            if entry["song"].casefold() == song_name.casefold():
                value = entry[attribute]
                return "-" if value is None else str(value)
        return None

    def grammy_years() -> range:
        return range(min(w.grammys), min(max(w.grammys), as_of.year) + 1)

    def music_grammy_get_best_artist_by_year(year: int | str) -> list[str] | None:
        y = parse_year(year)
        return [w.grammys[y]["best_new_artist"]] if y in grammy_years() else None

    def music_grammy_get_best_song_by_year(year: int | str) -> list[str] | None:
        y = parse_year(year)
        return [w.grammys[y]["song_of_the_year"]] if y in grammy_years() else None

    def music_grammy_get_best_album_by_year(year: int | str) -> list[str] | None:
        y = parse_year(year)
        return [w.grammys[y]["album_of_the_year"]] if y in grammy_years() else None

    def award_years(name: str) -> list[int]:
        key = name.strip().casefold()
        return [
            y
            for y in grammy_years()
            if key
            in (w.grammys[y]["best_new_artist"].casefold(), w.grammys[y]["album_artist"].casefold())
        ]

    def music_grammy_get_award_count_by_artist(artist_name: str) -> int | None:
        return None if artist(artist_name) is None else len(award_years(artist_name))

    def music_grammy_get_award_count_by_song(song_name: str) -> int | None:
        if song(song_name) is None:
            return None
        key = song_name.strip().casefold()
        return sum(w.grammys[y]["song_of_the_year"].casefold() == key for y in grammy_years())

    def music_grammy_get_award_date_by_artist(artist_name: str) -> list[int] | None:
        return None if artist(artist_name) is None else award_years(artist_name)

    def music_grammy_get_all_awarded_artists() -> list[str]:
        names = {
            w.grammys[y][k] for y in grammy_years() for k in ("best_new_artist", "album_artist")
        }
        return sorted(names)

    def music_get_artist_birth_place(artist_name: str) -> str | None:
        a = artist(artist_name)
        return None if a is None else a["birth_place"]

    def music_get_artist_birth_date(artist_name: str) -> str | None:
        a = artist(artist_name)
        return None if a is None else a["birth_date"]

    def music_get_members(band_name: str) -> list[str] | None:
        a = artist(band_name)
        if a is None:
            return None
        return [
            m
            for joined, left, m in a["members"]
            if joined <= as_of and (left is None or left > as_of.isoformat())
        ]

    def music_get_lifespan(artist_name: str) -> list[str | None] | None:
        a = artist(artist_name)
        if a is None:
            return None
        start, end = a["lifespan"]
        return [start, end if end is not None and int(end) <= as_of.year else None]

    def music_get_song_author(song_name: str) -> str | None:
        s = song(song_name)
        return None if s is None else s["author"]

    def music_get_song_release_country(song_name: str) -> str | None:
        s = song(song_name)
        return None if s is None else s["release_country"]

    def music_get_song_release_date(song_name: str) -> str | None:
        s = song(song_name)
        return None if s is None else s["release_date"]

    def music_get_artist_all_works(artist_name: str) -> list[str] | None:
        a = artist(artist_name)
        return None if a is None else [s for s in a["works"] if song(s) is not None]

    funcs = [
        (
            music_search_artist_entity_by_name,
            QueryParams,
            "list[str]",
            "fuzzy",
            "artist names matching the query (up to 10).",
        ),
        (
            music_search_song_entity_by_name,
            QueryParams,
            "list[str]",
            "fuzzy",
            "song names matching the query (up to 10).",
        ),
        (
            music_get_billboard_rank_date,
            RankDateParams,
            "list",
            "exact",
            "[[songs], [artists]] at a Billboard Hot 100 rank on the chart dated exactly "
            "`date` (every chart's if no date is given).",
        ),
        (
            music_get_billboard_attributes,
            BillboardAttrParams,
            "str | None",
            "exact",
            "a song's rank, rank_last_week, weeks_in_chart or top_position on the "
            "chart dated exactly `date`, as a string ('-' for a new entry's rank_last_week).",
        ),
        (
            music_grammy_get_best_artist_by_year,
            YearParams,
            "list[str] | None",
            "exact",
            "the Grammy Best New Artist of a year.",
        ),
        (
            music_grammy_get_award_count_by_artist,
            ArtistParams,
            "int | None",
            "exact",
            "Grammy awards won by an artist.",
        ),
        (
            music_grammy_get_award_count_by_song,
            SongParams,
            "int | None",
            "exact",
            "Grammy awards won by a song.",
        ),
        (
            music_grammy_get_best_song_by_year,
            YearParams,
            "list[str] | None",
            "exact",
            "the Grammy Song of the Year of a year.",
        ),
        (
            music_grammy_get_award_date_by_artist,
            ArtistParams,
            "list[int] | None",
            "exact",
            "the years an artist won Grammys.",
        ),
        (
            music_grammy_get_best_album_by_year,
            YearParams,
            "list[str] | None",
            "exact",
            "the Grammy Album of the Year of a year.",
        ),
        (
            music_grammy_get_all_awarded_artists,
            Params,
            "list[str]",
            "none",
            "every artist who has won a Grammy.",
        ),
        (
            music_get_artist_birth_place,
            ArtistParams,
            "str | None",
            "exact",
            "an artist's birth place.",
        ),
        (
            music_get_artist_birth_date,
            ArtistParams,
            "str | None",
            "exact",
            "an artist's birth date.",
        ),
        (
            music_get_members,
            BandParams,
            "list[str] | None",
            "exact",
            "a band's current members.",
        ),
        (
            music_get_lifespan,
            ArtistParams,
            "list | None",
            "exact",
            "[start year, end year or None] of an artist or band.",
        ),
        (music_get_song_author, SongParams, "str | None", "exact", "a song's author."),
        (
            music_get_song_release_country,
            SongParams,
            "str | None",
            "exact",
            "a song's release country.",
        ),
        (
            music_get_song_release_date,
            SongParams,
            "str | None",
            "exact",
            "a song's release date.",
        ),
        (
            music_get_artist_all_works,
            ArtistParams,
            "list[str] | None",
            "exact",
            "an artist's works.",
        ),
    ]
    return specs(funcs)
