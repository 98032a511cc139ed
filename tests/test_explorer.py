"""The web explorer (``/explore``) driven in headless Chromium: Debian's ``/usr/bin/chromium`` through
Playwright (``executable_path``; Playwright never downloads a browser here).

A real Flask server on loopback serves the session's ``MemoryService`` (embedded FalkorDB, real
embeddings); the page signs in with tenant keys of the JSON API, opens the test conversation,
drills down topic -> episode -> facts -> source turns, opens a person's timeline, runs a query
and checks the explanation path drawn on the graph against the JSON the API returns. A LoCoMo
conversation of 680 turns checks that the graph stays paginated and capped. Every test saves a
screenshot under ``$HYPERMEM_ARTIFACTS`` (default ``/tmp/hypermem-artifacts``).
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import pytest
from conftest import LOCOMO
from werkzeug.serving import make_server

from hypermem import browse
from hypermem.api import create_app
from hypermem.ingest.locomo import load_locomo
from hypermem.records.keys import create_key
from hypermem.records.owners import assign_memory

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(os.environ.get("HYPERMEM_ARTIFACTS", "/tmp/hypermem-artifacts"))
LARGE = "conv-43"  # 680 turns, the size the explorer must stay usable at
QUESTION = "What is the name of Omar's puppy?"


@pytest.fixture(scope="module")
def server(hm_service, hm_ingested):
    """The API + explorer on a free loopback port, over the session's service."""
    app = create_app(service=hm_service)
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{http.server_port}"
    http.shutdown()
    thread.join()
    app.extensions["hypermem"].close()


@pytest.fixture(scope="module")
def keys(hm_service, hm_ingested) -> dict[str, str]:
    """Tenant keys: ``acme`` owns the test conversation, ``globex`` owns nothing."""
    store = hm_service.store
    assign_memory(store, hm_ingested.memory_id, "explorer-acme")
    return {name: create_key(store, f"explorer-{name}")["key"] for name in ("acme", "globex")}


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium package")
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, server, request):
    """A fresh browser context at /explore; saves a screenshot named after the test when it ends."""
    context = browser.new_context(viewport={"width": 1500, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server}/explore")
    yield page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"))
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


def sign_in(page, key: str) -> None:
    page.fill("#key", key)
    page.click("#signin")


def graph_kinds(page) -> dict[str, int]:
    """Node count per kind on the cytoscape graph."""
    return page.evaluate(
        "() => explorer.cy.nodes().map((n) => n.data('kind')).reduce((c, k) => ((c[k] = (c[k] || 0) + 1), c), {})"
    )


def open_memory(page, key: str, memory_id: str) -> None:
    sign_in(page, key)
    page.click(f"#memories li[data-memory='{memory_id}']")
    expect(page.locator("#topics tbody tr").first).to_be_visible()


# --- tests ------------------------------------------------------------------------------------------
def test_vendored_cytoscape_matches_the_lock_file():
    """static/vendor/ holds the cytoscape build that explorer/package-lock.json pins, with its MIT license."""
    root = Path(__file__).parents[1]
    locked = json.loads((root / "explorer" / "package-lock.json").read_text())["packages"]["node_modules/cytoscape"]
    vendor = root / "service" / "hypermem" / "api" / "static" / "vendor"
    built = re.findall(r'\.version="(\d+\.\d+\.\d+)"', (vendor / "cytoscape.min.js").read_text(encoding="utf-8"))
    assert built == [locked["version"]]
    assert locked["license"] == "MIT" and "Permission is hereby granted" in (vendor / "cytoscape.LICENSE").read_text()


def test_page_and_vendored_graph_library_are_served_offline(page, server):
    assert page.evaluate("() => typeof cytoscape") == "function"
    lock = json.loads((Path(__file__).parents[1] / "explorer" / "package-lock.json").read_text())
    assert page.evaluate("() => cytoscape.version") == lock["packages"]["node_modules/cytoscape"]["version"]
    scripts = page.eval_on_selector_all("script[src], link[href]", "els => els.map(e => e.src || e.href)")
    assert scripts and all(s.startswith(server) for s in scripts)  # nothing from a CDN


def test_unknown_key_is_refused(page):
    sign_in(page, "hmk_0000000000000000_forged")
    expect(page.locator("#login-error")).to_contain_text("401")
    assert page.evaluate("() => sessionStorage.getItem('hypermem.key')") is None
    assert page.locator("#memories li").count() == 0


def test_a_tenant_sees_only_its_own_memories(page, keys, hm_ingested):
    sign_in(page, keys["globex"])
    expect(page.locator("#details")).to_contain_text("owns no memory")
    assert page.locator(f"#memories li[data-memory='{hm_ingested.memory_id}']").count() == 0
    page.reload()  # the key survives a reload (sessionStorage), and still reads nothing of acme's
    expect(page.locator("#session")).to_be_visible()
    assert page.locator("#memories li").count() == 0


def test_drill_down_topic_to_episodes_to_facts_to_source_turns(page, keys, hm_service, hm_ingested):
    memory = hm_ingested.memory_id
    open_memory(page, keys["acme"], memory)
    topics = browse.topics(hm_service.store, memory, limit=10)
    rows = page.locator("#topics tbody tr")
    expect(rows).to_have_count(len(topics))
    first = topics[0]
    expect(rows.first).to_contain_text(str(first["episodes"]))
    expect(rows.first).to_contain_text(f"{first['first'][:10]} – {first['last'][:10]}")
    assert graph_kinds(page)["Topic"] == len(topics)

    rows.first.click()
    topic = browse.topic(hm_service.store, memory, first["id"])
    expect(page.locator("#topic-episodes tr")).to_have_count(len(topic["episodes"]))
    expect(page.locator("#graph-caption")).to_contain_text(f"hyperedges around Topic {first['id']}")
    kinds = graph_kinds(page)
    assert kinds["Hyperedge"] >= 1 and kinds["Episode"] == len(topic["episodes"])
    weight = f"w {topic['episodes'][0]['weight']:.4f}"
    assert weight in page.evaluate("() => explorer.cy.edges().map((e) => e.data('label'))")

    page.locator("#topic-episodes tr").first.click()
    episode = browse.episode(hm_service.store, memory, topic["episodes"][0]["id"])
    expect(page.locator("#episode-facts > li")).to_have_count(len(episode["facts"]))
    turn = episode["turns"][0]
    row = page.locator(f"#episode-turns tr[data-dia='{turn['dia_id']}']")
    expect(row).to_contain_text(turn["speaker"])
    expect(row).to_contain_text(turn["text"])
    expect(row).to_contain_text(turn["timestamp"][:10])
    fact = episode["facts"][0]
    source = page.locator(f"#episode-facts > li[data-fact='{fact['id']}'] .turns tr")
    expect(source).to_have_count(len(fact["turn_ids"]))
    expect(page.locator("#graph-caption")).to_contain_text(f"hyperedges around Episode {episode['id']}")
    kinds = graph_kinds(page)
    assert kinds["Fact"] == len(episode["facts"]) and kinds["Hyperedge"] >= 2  # episode + segment hyperedges

    page.locator(f"#episode-facts > li[data-fact='{fact['id']}'] > span").first.click()  # the hyperedges around a fact
    expect(page.locator("#hyperedge-list")).to_contain_text(f"episode hyperedge (member, weight {fact['weight']:.4f})")
    expect(page.locator("#graph-caption")).to_contain_text(f"hyperedges around Fact {fact['id']}")
    hyperedge = browse.node_hyperedges(hm_service.store, memory, fact["id"])["hyperedges"][0]
    page.evaluate(
        "(id) => explorer.cy.getElementById(id).emit('tap')", hyperedge["id"]
    )  # a Hyperedge node: its members
    members = page.locator("#hyperedge-members tr")
    expect(members).to_have_count(len(episode["facts"]))
    expect(members.first).to_contain_text(f"{hyperedge['members'][0]['weight']:.4f}")


def test_person_timeline(page, keys, hm_service, hm_ingested):
    open_memory(page, keys["acme"], hm_ingested.memory_id)
    page.click("#people li[data-person='Nadia']")
    items = browse.timeline(hm_service.store, hm_ingested.memory_id, "Nadia")
    expect(page.locator("#timeline tr")).to_have_count(len(items))
    expect(page.locator("#timeline tr").first).to_contain_text(items[0]["date"][:10])
    expect(page.locator("#graph-caption")).to_contain_text("hyperedges around Person")
    assert graph_kinds(page)["Person"] >= 1


def test_query_draws_the_explanation_path_of_each_evidence_turn(page, keys, hm_ingested):
    open_memory(page, keys["acme"], hm_ingested.memory_id)
    page.fill("#query-text", QUESTION)
    page.click("#query-run")
    evidence = page.locator("#evidence > li")
    expect(evidence.first).to_be_visible()
    expect(page.locator("#graph-caption")).to_contain_text("explanation paths")
    expect(page.locator("#evidence > li[data-dia='D1:4']")).to_contain_text("Biscuit")
    stop = page.evaluate("() => explorer.result.stop")
    expect(page.locator("#stop")).to_contain_text(
        f"stop rule {stop['rule']} · kept {stop['cut_at']} of {stop['considered']} candidate turns"
    )
    assert stop["counts"] == "candidate turns"
    expect(page.locator("#query-topics")).to_have_count(0)  # the topic level is off: no empty topics section
    kinds = graph_kinds(page)
    assert {"Query", "Hyperedge", "Episode", "Fact", "Turn"} <= set(kinds) and "Topic" not in kinds  # topics: off
    assert kinds["Query"] == 1 and kinds["Turn"] == evidence.count()
    expect(page.locator("#graph-caption")).to_contain_text("query → episode → hyperedge → fact → turn")
    path_text = page.locator("#evidence > li[data-dia='D1:4'] .path").inner_text()
    assert re.match(r"query → episode [\d.]+ \[.*\] → episode hyperedge \(w [\d.]+\) → fact .* → turn D1:4", path_text)

    page.locator("#evidence > li[data-dia='D1:4']").click()
    highlighted = page.evaluate("() => explorer.cy.nodes('.hl').map((n) => n.data('kind'))")
    assert highlighted == ["Query", "Episode", "Hyperedge", "Fact", "Turn"]
    assert page.evaluate("() => explorer.cy.edges('.hl').length") == 4


@pytest.fixture(scope="module")
def large_memory(hm_service, keys) -> str:
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo dev data not found at {LOCOMO}")
    conversation = load_locomo(LOCOMO, [LARGE])[0]
    hm_service.ingest_conversation(conversation)
    assign_memory(hm_service.store, LARGE, "explorer-acme")
    return LARGE


@pytest.mark.locomo
def test_a_680_turn_conversation_is_paged_and_capped(page, keys, hm_service, large_memory):
    store = hm_service.store
    counts = store.counts(large_memory)
    topics = browse.topics(store, large_memory, limit=200)
    assert counts["Turn"] == 680 and len(topics) > 10
    open_memory(page, keys["acme"], large_memory)
    expect(page.locator("#topics tbody tr")).to_have_count(10)
    page.click("#topics-next")
    expect(page.locator("#topics-page")).to_have_text(f"11–{min(20, len(topics))}")

    page.click("#topics-prev")
    biggest = topics[0]  # most episodes first
    assert biggest["episodes"] > 12
    page.click(f"#topics tr[data-topic='{biggest['id']}']")
    expect(page.locator("#topic-episodes tr")).to_have_count(biggest["episodes"])  # the list is complete...
    expect(page.locator("#graph-caption")).to_contain_text(f"hyperedges around Topic {biggest['id']}")
    kinds = graph_kinds(page)  # ...the drawing is capped, the rest summarised
    assert kinds["Episode"] == 12 and kinds["More"] == 1
    more = page.evaluate("() => explorer.cy.nodes('[kind = \"More\"]').map((n) => n.data('label'))")
    assert more == [f"+{biggest['episodes'] - 12} more"]

    person = browse.people(store, large_memory)[0]
    page.click(f"#people li[data-person='{person['name']}']")
    expect(page.locator("#timeline tr").first).to_be_visible()
    expect(page.locator("#graph-caption")).to_contain_text(re.compile(r"hyperedges around Person .*: 12 of \d+ shown"))
    total = int(re.search(r"12 of (\d+) shown", page.locator("#graph-caption").inner_text()).group(1))
    nodes = page.evaluate("() => explorer.cy.nodes().length")
    assert total > 12 and nodes <= 1 + 12 * (1 + 1 + 12 + 1) + 1  # center; per hyperedge: itself, owner, members, "+N"
