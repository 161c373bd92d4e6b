#!/usr/bin/env python3
"""Generate the fixture-backed business scenarios (issue tracker, CRM, calendar, metrics) and
the small ones where code mode should not win. Deterministic: a fixed seed per scenario.

    python3 bench/tools/gen_business.py && node bench/tools/check.mjs
"""
import random
import statistics
from datetime import datetime, timedelta, timezone

from common import arr, i, n, obj, prog, s, write

PEOPLE = [
    ("Priya Raman", "priya.raman"), ("Marcus Oyelaran", "marcus.oyelaran"),
    ("Sofia Lindqvist", "sofia.lindqvist"), ("Daniel Okafor", "daniel.okafor"),
    ("Hannah Weiss", "hannah.weiss"), ("Tomás Ferreira", "tomas.ferreira"),
    ("Aiko Tanaka", "aiko.tanaka"), ("Ravi Menon", "ravi.menon"),
    ("Elena Petrova", "elena.petrova"), ("James O'Connell", "james.oconnell"),
    ("Fatima Al-Sayed", "fatima.alsayed"), ("Lukas Becker", "lukas.becker"),
    ("Grace Kim", "grace.kim"), ("Noah Bennett", "noah.bennett"),
]
DOMAIN = "northwind.io"


def email(handle):
    return f"{handle}@{DOMAIN}"


def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def utc(*a):
    return datetime(*a, tzinfo=timezone.utc)


# ---------------------------------------------------------------- issue tracker

COMPONENTS = {
    "checkout": ["the checkout page", "the card form", "the order summary", "3-D Secure challenge"],
    "payouts": ["the payout scheduler", "the bank transfer batch", "payout reconciliation", "the payout CSV export"],
    "ledger": ["the double-entry ledger", "balance snapshots", "the ledger compaction job", "journal replay"],
    "webhooks": ["webhook delivery", "the webhook retry queue", "signature verification", "the event fan-out worker"],
    "refunds": ["partial refunds", "the refund API", "refund notifications", "chargeback imports"],
    "fx": ["the FX rate cache", "currency conversion", "multi-currency invoices", "rounding of converted amounts"],
}
SYMPTOMS = [
    ("returns HTTP 500 when {x}", "The request fails with `500 Internal Server Error` and the trace shows `{err}`."),
    ("double-counts amounts when {x}", "Totals are off by exactly the amount of the last line item; the ledger shows two postings with the same idempotency key."),
    ("times out when {x}", "The call hangs for 30 s and the gateway cancels it; p99 for the endpoint jumped from 240 ms to 31 s."),
    ("shows stale data after {x}", "Users see values from before the change for up to 15 minutes; a hard refresh does not help, so the cache is server-side."),
    ("drops events when {x}", "About 2% of events never reach the consumer; the dead-letter queue is empty, so they are lost before enqueueing."),
    ("rounds incorrectly when {x}", "Amounts in JPY and KRW come out with two decimals, and EUR amounts ending in .005 round down instead of half-even."),
]
TRIGGERS = [
    "the merchant has more than 500 open orders", "a retry arrives after the original succeeded",
    "the customer's locale is de-CH", "the batch crosses midnight UTC", "two workers pick up the same job",
    "the idempotency key is reused within 24h", "the upstream bank API returns 429", "the amount is zero",
    "the currency is not the account's default", "the request is replayed from the outbox",
]
ERRORS = ["NullPointerException in LedgerWriter.post", "deadlock detected (SQLSTATE 40P01)",
          "context deadline exceeded", "duplicate key value violates unique constraint \"postings_idem_key\"",
          "connection reset by peer", "index out of range [3] with length 3"]
ENVS = ["production (eu-west-1)", "production (us-east-1)", "staging", "production, all regions"]


def issue_body(rng, comp_desc, symptom, trigger):
    title_part, detail = symptom
    err = rng.choice(ERRORS)
    n_cust = rng.choice([1, 3, 4, 12, 27, 60])
    return (
        f"**Summary**\n{comp_desc[0].upper() + comp_desc[1:]} {title_part.format(x=trigger)}.\n\n"
        f"**Steps to reproduce**\n1. Create a test merchant in {rng.choice(ENVS)}.\n2. Make sure {trigger}.\n"
        f"3. Exercise {comp_desc} through the dashboard or the public API.\n\n"
        f"**Actual**\n{detail.format(err=err)}\n\n**Expected**\nThe operation completes normally.\n\n"
        f"**Impact**\nReported by {n_cust} merchant{'s' if n_cust > 1 else ''} so far; see the linked support tickets."
    )


def gen_issues(rng, project, count, people, start, labels_pool, priorities):
    issues = []
    for k in range(count):
        comp = rng.choice(sorted(COMPONENTS))
        comp_desc = rng.choice(COMPONENTS[comp])
        symptom = rng.choice(SYMPTOMS)
        trigger = rng.choice(TRIGGERS)
        kind = rng.choice(labels_pool)
        pr = rng.choice(priorities)
        assignee = rng.choice(people)
        reporter = rng.choice(PEOPLE)
        created = start + timedelta(days=rng.randint(0, 40), hours=rng.randint(0, 23), minutes=rng.randint(0, 59))
        updated = created + timedelta(days=rng.randint(0, 6), hours=rng.randint(1, 20))
        title = f"{comp_desc[0].upper() + comp_desc[1:]} {symptom[0].format(x=trigger)}"
        labels = sorted({kind, comp} | ({"customer-reported"} if rng.random() < 0.4 else set()))
        issues.append({
            "key": f"{project}-{1200 + k * 7 + rng.randint(0, 6)}",
            "title": title,
            "state": "open",
            "priority": pr,
            "labels": labels,
            "assignee": None if assignee is None else {"name": assignee[0], "email": email(assignee[1])},
            "reporter": {"name": reporter[0], "email": email(reporter[1])},
            "created_at": iso(created),
            "updated_at": iso(updated),
            "body": issue_body(rng, comp_desc, symptom, trigger),
        })
    return issues


ISSUE_SCHEMA = obj({
    "key": s("Issue key, e.g. PAY-1234"), "title": s("Title"), "state": s("open or closed"),
    "priority": s("P0 (highest) to P4"), "labels": arr({"type": "string"}),
    "assignee": {"type": ["object", "null"], "properties": {"name": {"type": "string"}, "email": {"type": "string"}}},
    "reporter": obj({"name": {"type": "string"}, "email": {"type": "string"}}),
    "created_at": s("ISO 8601"), "updated_at": s("ISO 8601"), "body": s("Markdown body"),
}, ["key", "title", "state", "priority", "labels", "assignee", "created_at", "body"])

LIST_ISSUES = {
    "name": "list_issues",
    "description": "List issues of a project in the issue tracker, newest first, with their full bodies. Filters combine with AND.",
    "inputSchema": obj({
        "project": s("Project key, e.g. PAY"),
        "state": s("Issue state", enum=["open", "closed", "all"]),
        "labels": arr({"type": "string"}, "Only issues carrying all of these labels"),
        "assignee": s("Only issues assigned to this email"),
    }, ["project"], additionalProperties=False),
    "outputSchema": obj({"issues": arr(ISSUE_SCHEMA), "total": i("Number of issues returned")}, ["issues", "total"]),
}


def scenario_oncall_p1():
    rng = random.Random(4)
    oncall = [PEOPLE[0], PEOPLE[3], PEOPLE[6], PEOPLE[9]]
    others = [PEOPLE[1], PEOPLE[4], PEOPLE[12], None]
    issues = gen_issues(rng, "PAY", 52, oncall + others, utc(2026, 1, 20), ["bug", "bug", "bug", "task", "improvement"],
                        ["P1", "P1", "P2", "P2", "P3", "P4"])
    issues.sort(key=lambda x: x["created_at"], reverse=True)
    week = [
        {"engineer": oncall[k][0], "email": email(oncall[k][1]),
         "start": iso(utc(2026, 3, 9) + timedelta(days=2 * k if k < 3 else 6)),
         "end": iso(utc(2026, 3, 9) + timedelta(days=2 * (k + 1) if k < 2 else (6 if k == 2 else 7))),
         "layer": "primary"} for k in range(4)
    ]
    counts = {}
    for x in issues:
        if x["priority"] == "P1" and "bug" in x["labels"] and x["assignee"]:
            counts[x["assignee"]["email"]] = counts.get(x["assignee"]["email"], 0) + 1
    ranked = sorted(oncall, key=lambda p: (-counts.get(email(p[1]), 0), p[0]))
    top = ranked[0]
    assert counts.get(email(top[1]), 0) > counts.get(email(ranked[1][1]), 0), counts
    slots_by_person = {}
    for k, p in enumerate(oncall):
        base = utc(2026, 3, 10, 9) + timedelta(minutes=30 * (k + 2))
        slots_by_person[email(p[1])] = [
            {"start": iso(base + timedelta(minutes=m)), "end": iso(base + timedelta(minutes=m + 30))}
            for m in (0, 150, 270, 330)
        ]
    tools = [
        {**LIST_ISSUES, "fixture": {"responses": [
            {"args": {"project": "PAY", "state": "open"}, "result": {"issues": issues, "total": len(issues)}}]}},
        {"name": "get_oncall_schedule",
         "description": "Shifts of an on-call schedule for the week starting on the given Monday.",
         "inputSchema": obj({"schedule": s("Schedule id, e.g. payments-primary"), "week_start": s("Monday, YYYY-MM-DD")},
                            ["schedule", "week_start"], additionalProperties=False),
         "outputSchema": obj({"schedule": {"type": "string"}, "timezone": {"type": "string"},
                              "shifts": arr(obj({"engineer": {"type": "string"}, "email": {"type": "string"},
                                                 "start": {"type": "string"}, "end": {"type": "string"},
                                                 "layer": {"type": "string"}}, ["engineer", "email", "start", "end"]))},
                             ["schedule", "shifts"]),
         "fixture": {"responses": [{"args": {"schedule": "payments-primary", "week_start": "2026-03-09"},
                                    "result": {"schedule": "payments-primary", "timezone": "UTC", "shifts": week}}]}},
        {"name": "find_free_slots",
         "description": "Free slots of one person's calendar on a day, within working hours (09:00-17:00 in their timezone), earliest first.",
         "inputSchema": obj({"email": s("The person's email"), "date": s("YYYY-MM-DD"),
                             "duration_minutes": i("Slot length", minimum=15, maximum=240)},
                            ["email", "date", "duration_minutes"], additionalProperties=False),
         "outputSchema": obj({"email": {"type": "string"}, "slots": arr(obj({"start": {"type": "string"}, "end": {"type": "string"}}, ["start", "end"]))}, ["email", "slots"]),
         "fixture": {"responses": [
             {"args": {"email": e, "date": "2026-03-10", "duration_minutes": 30}, "result": {"email": e, "slots": sl}}
             for e, sl in slots_by_person.items()]}},
    ]
    expected = {"engineer": top[0], "email": email(top[1]), "open_p1_bugs": counts[email(top[1])],
                "first_free_slot": slots_by_person[email(top[1])][0]}
    return {
        "name": "oncall-p1-bugs",
        "description": "Issue tracker + on-call schedule + calendar: filter a 50-issue listing (~45 KB of bodies) down to one count per engineer, then one chained lookup; direct mode carries the whole listing through every later turn.",
        "task": "Which engineer on this week's payments-primary on-call rotation (week starting 2026-03-09) has the most open P1 bugs (priority P1, label `bug`) in project PAY, and what is their first free 30-minute slot on Tuesday 2026-03-10?",
        "tools": tools,
        "program": prog("""
            const [{ issues }, { shifts }] = await Promise.all([
              tools.list_issues({ project: "PAY", state: "open" }),
              tools.get_oncall_schedule({ schedule: "payments-primary", week_start: "2026-03-09" }),
            ]);
            const oncall = new Map(shifts.map((s) => [s.email, s.engineer]));
            const counts = new Map();
            for (const i of issues) {
              const who = i.assignee?.email;
              if (i.priority === "P1" && i.labels.includes("bug") && oncall.has(who)) {
                counts.set(who, (counts.get(who) ?? 0) + 1);
              }
            }
            const [email, n] = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0];
            const { slots } = await tools.find_free_slots({ email, date: "2026-03-10", duration_minutes: 30 });
            return { engineer: oncall.get(email), email, open_p1_bugs: n, first_free_slot: slots[0] };
        """),
        "expected": expected,
        "answer": f"{top[0]} ({email(top[1])}) has the most open P1 bugs in PAY among this week's on-call engineers: {counts[email(top[1])]}. Their first free 30-minute slot on Tuesday 2026-03-10 is {slots_by_person[email(top[1])][0]['start']} to {slots_by_person[email(top[1])][0]['end']}.",
        "answer_contains": [top[0], str(counts[email(top[1])]), slots_by_person[email(top[1])][0]["start"]],
    }


COMMENT_TEXTS_CUSTOMER = [
    "We are seeing this again this morning on our production account. {n} of our orders from the last hour are affected and our finance team is asking when a fix will land. Is there a workaround we can apply on our side in the meantime?",
    "Same here. This started right after your release on {d}; before that everything worked for months. We have not changed anything in our integration. Happy to share request ids privately if that helps.",
    "+1, this is blocking our month-end close. Our accountant needs the exported numbers to match the dashboard and right now they are off for about {n} transactions.",
    "Any update? Our customers keep writing to support about it and we have had to refund {n} orders manually to keep them happy.",
    "We found that retrying after a few minutes sometimes works, but not reliably. Attaching the response headers from a failing call: x-request-id req_{r}, region eu-west-1.",
    "Confirming this also affects our sandbox account, so it is easy to reproduce with the steps in the description.",
]
COMMENT_TEXTS_STAFF = [
    "Thanks for the report. I can reproduce it in staging with the steps above; the regression comes from the change to the retry path in {d}'s release. Working on a fix now.",
    "Fix is in review (#{n}). It adds a guard for the duplicate case and a regression test. We will deploy it behind a flag first and roll out region by region.",
    "Escalating to P1: the number of affected merchants is growing. Support has linked {n} tickets.",
    "Deployed the mitigation to eu-west-1; monitoring the error rate for the next hour before rolling out to us-east-1.",
]


def scenario_regression_triage():
    rng = random.Random(5)
    issues = gen_issues(rng, "WEB", 14, PEOPLE[:8], utc(2026, 2, 1), ["bug"], ["P1", "P2", "P2", "P3"])
    for x in issues:
        x["labels"] = sorted(set(x["labels"]) | {"regression"})
    issues.sort(key=lambda x: x["created_at"], reverse=True)
    customers = ["Lena Fischer (Brightcart)", "Omar Haddad (Souk Digital)", "Chloé Martin (Atelier Nord)",
                 "Ben Carter (Pinecrest Outfitters)", "Yuki Sato (Mochi Labs)", "Ana Souza (Casa Verde)"]
    comments_by_key = {}
    cust_counts = {}
    wanted = [9, 7, 6]  # distinct top counts keep the ranking unambiguous
    for idx, x in enumerate(issues):
        nc = wanted[idx // 4] if idx % 4 == 1 and idx // 4 < 3 else rng.randint(0, 5)
        ns = rng.randint(1, 4)
        created = datetime.strptime(x["created_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
        kinds = ["customer"] * nc + ["staff"] * ns
        rng.shuffle(kinds)
        cs = []
        t = created
        for k, kind in enumerate(kinds):
            t = t + timedelta(hours=rng.randint(2, 30), minutes=rng.randint(0, 59))
            if kind == "customer":
                author = rng.choice(customers)
                body = rng.choice(COMMENT_TEXTS_CUSTOMER)
            else:
                p = rng.choice(PEOPLE[:8])
                author = f"{p[0]} (Northwind)"
                body = rng.choice(COMMENT_TEXTS_STAFF)
            body = body.format(n=rng.randint(3, 480), d=(created - timedelta(days=1)).strftime("%Y-%m-%d"), r=f"{rng.getrandbits(48):012x}")
            cs.append({"id": f"c_{x['key'].lower()}_{k + 1}", "author": author, "author_type": kind,
                       "created_at": iso(t), "body": body})
        comments_by_key[x["key"]] = cs
        cust = [c for c in cs if c["author_type"] == "customer"]
        cust_counts[x["key"]] = (len(cust), max((c["created_at"] for c in cust), default=None))
    ranked = sorted(issues, key=lambda x: (-cust_counts[x["key"]][0], x["key"]))[:3]
    expected = [{"key": x["key"], "title": x["title"], "customer_comments": cust_counts[x["key"]][0],
                 "last_customer_comment": cust_counts[x["key"]][1]} for x in ranked]
    assert [e["customer_comments"] for e in expected] == wanted, expected
    comment_schema = obj({"id": {"type": "string"}, "author": {"type": "string"},
                          "author_type": {"type": "string", "enum": ["customer", "staff"]},
                          "created_at": {"type": "string"}, "body": {"type": "string"}},
                         ["id", "author", "author_type", "created_at", "body"])
    tools = [
        {**LIST_ISSUES, "fixture": {"responses": [
            {"args": {"project": "WEB", "state": "open", "labels": ["regression"]},
             "result": {"issues": issues, "total": len(issues)}}]}},
        {"name": "list_comments", "description": "All comments of one issue, oldest first.",
         "inputSchema": obj({"issue_key": s("Issue key, e.g. WEB-1234")}, ["issue_key"], additionalProperties=False),
         "outputSchema": obj({"issue_key": {"type": "string"}, "comments": arr(comment_schema)}, ["issue_key", "comments"]),
         "fixture": {"responses": [{"args": {"issue_key": k}, "result": {"issue_key": k, "comments": v}}
                                   for k, v in comments_by_key.items()]}},
    ]
    return {
        "name": "regression-comment-triage",
        "description": "Issue tracker fan-out: list 14 regression issues, fetch every issue's comments in parallel (~30 KB in all) and rank by customer comments; direct mode reads every comment thread.",
        "task": "Of the open issues labeled `regression` in project WEB, which three have the most comments from customers (author_type `customer`)? For each give the key, title, the number of customer comments and the date of the latest customer comment.",
        "tools": tools,
        "program": prog("""
            const { issues } = await tools.list_issues({ project: "WEB", state: "open", labels: ["regression"] });
            const threads = await Promise.all(issues.map((i) => tools.list_comments({ issue_key: i.key })));
            const rows = issues.map((issue, k) => {
              const cust = threads[k].comments.filter((c) => c.author_type === "customer");
              return {
                key: issue.key,
                title: issue.title,
                customer_comments: cust.length,
                last_customer_comment: cust.map((c) => c.created_at).sort().at(-1) ?? null,
              };
            });
            rows.sort((a, b) => b.customer_comments - a.customer_comments || a.key.localeCompare(b.key));
            return rows.slice(0, 3);
        """),
        "expected": expected,
        "answer_contains": [expected[0]["key"], expected[1]["key"], expected[2]["key"]],
    }


# ---------------------------------------------------------------- CRM

ACCOUNTS = [
    ("Harborview Health", "harborviewhealth.org", "Healthcare"), ("Meridian Logistics", "meridianlogistics.com", "Logistics"),
    ("Cobalt Ridge Bank", "cobaltridge.com", "Financial Services"), ("Lumen Pediatrics", "lumenpeds.com", "Healthcare"),
    ("Oakline Foods", "oaklinefoods.com", "Consumer Goods"), ("Tessera Robotics", "tessera-robotics.com", "Manufacturing"),
    ("St. Brigid Medical Group", "stbrigidmg.org", "Healthcare"), ("Vantage Insurance", "vantageins.com", "Financial Services"),
    ("Bluewater Analytics", "bluewater.ai", "Software"), ("Northgate University", "northgate.edu", "Education"),
    ("Kestrel Air", "kestrelair.com", "Transportation"), ("Pinecrest Outfitters", "pinecrest.co", "Retail"),
    ("Quanta Diagnostics", "quantadx.com", "Healthcare"), ("Redwood Energy", "redwoodenergy.com", "Energy"),
    ("Solace Senior Living", "solaceliving.com", "Healthcare"), ("Alder & Finch Legal", "alderfinch.law", "Professional Services"),
    ("Mosaic Media", "mosaicmedia.tv", "Media"), ("Crescent Pharmacy", "crescentrx.com", "Healthcare"),
    ("Ironbridge Construction", "ironbridge.build", "Construction"), ("Helix Genomics", "helixgenomics.com", "Healthcare"),
]
OWNERS = [PEOPLE[1], PEOPLE[4], PEOPLE[7], PEOPLE[10], PEOPLE[13]]
CSMS = [PEOPLE[2], PEOPLE[5], PEOPLE[8], PEOPLE[11]]
ACCOUNT_NOTES = [
    "Renewal conversation started with procurement; they want a three-year term with a price cap and asked for SOC 2 Type II and the latest pen-test summary before legal review.",
    "Champion moved to a new role in January; the new VP is still forming an opinion. Exec sponsor meeting planned for early April to re-establish the relationship.",
    "Expanding from the pilot team to two more business units. Usage grew 40% quarter over quarter; SSO rollout is the main blocker and is scheduled for next month.",
    "Had two P1 incidents last quarter that hurt trust; the post-mortems were well received. Watch the health score closely through the renewal window.",
    "Strong adoption in the analytics team. They are evaluating a competitor for the data warehouse connector, so the roadmap call about native connectors matters.",
]


def make_accounts(rng):
    out = {}
    for k, (name, domain, industry) in enumerate(ACCOUNTS):
        owner = OWNERS[k % len(OWNERS)] if k < 15 else OWNERS[(k * 3) % len(OWNERS)]
        csm = CSMS[k % len(CSMS)]
        acc_id = f"acc_{7000 + k * 37}"
        out[acc_id] = {
            "id": acc_id, "name": name, "domain": domain, "industry": industry,
            "employees": rng.choice([180, 420, 950, 1600, 3200, 7800, 15000]),
            "arr": rng.randrange(60_000, 1_400_000, 5_000),
            "tier": rng.choice(["enterprise", "enterprise", "mid-market", "strategic"]),
            "owner": {"name": owner[0], "email": email(owner[1])},
            "csm": {"name": csm[0], "email": email(csm[1])},
            "billing_country": rng.choice(["US", "US", "US", "CA", "GB", "DE"]),
            "health_score": rng.randint(38, 96),
            "renewal_date": f"2026-{rng.randint(4, 12):02d}-{rng.randint(1, 28):02d}",
            "open_support_tickets": rng.randint(0, 14),
            "tags": sorted(rng.sample(["multi-region", "sso", "hipaa", "pci", "reference-customer", "at-risk", "expansion", "pilot"], 3)),
            "notes": " ".join(rng.sample(ACCOUNT_NOTES, 3)),
        }
    return out


ACCOUNT_SCHEMA = obj({
    "id": {"type": "string"}, "name": {"type": "string"}, "domain": {"type": "string"}, "industry": {"type": "string"},
    "employees": {"type": "integer"}, "arr": n("Annual recurring revenue, USD"), "tier": {"type": "string"},
    "owner": obj({"name": {"type": "string"}, "email": {"type": "string"}}, ["name", "email"]),
    "csm": obj({"name": {"type": "string"}, "email": {"type": "string"}}),
    "billing_country": {"type": "string"}, "health_score": {"type": "integer"}, "renewal_date": {"type": "string"},
    "open_support_tickets": {"type": "integer"}, "tags": arr({"type": "string"}), "notes": {"type": "string"},
}, ["id", "name", "industry", "arr", "owner"])
GET_ACCOUNT = {
    "name": "get_account", "description": "One CRM account by id, with its owner, customer success manager, ARR and notes.",
    "inputSchema": obj({"account_id": s("Account id, e.g. acc_7000")}, ["account_id"], additionalProperties=False),
    "outputSchema": ACCOUNT_SCHEMA,
}
STAGES = [("Discovery", 10), ("Qualification", 25), ("Proposal", 50), ("Negotiation", 70), ("Commit", 90)]
PRODUCTS = [("PLT-CORE", "Platform Core", 24_000), ("PLT-ANL", "Analytics add-on", 9_000),
            ("PLT-SSO", "Enterprise SSO", 4_500), ("SUP-PREM", "Premium Support", 12_000), ("PLT-API", "API overage pack", 3_000)]
NEXT_STEPS = ["Security review call with their CISO", "Send revised order form with 3-year pricing",
              "Technical validation workshop", "Procurement redlines due", "Exec alignment meeting",
              "Pilot success review", "Legal review of DPA"]


def scenario_crm_pipeline():
    rng = random.Random(6)
    accounts = make_accounts(rng)
    ids = sorted(accounts)
    deals = []
    for k in range(68):
        acc = accounts[rng.choice(ids[:17])]
        stage, prob = rng.choice(STAGES)
        items = [(sku, name, price, rng.randint(1, 6)) for sku, name, price in rng.sample(PRODUCTS, rng.randint(1, 3))]
        amount = sum(price * q for _, _, price, q in items)
        sdr = rng.choice(PEOPLE[:6])
        deals.append({
            "id": f"deal_{40100 + k * 13}", "name": f"{acc['name']} - {items[0][1]} {rng.choice(['expansion', 'renewal', 'new business'])}",
            "account_id": acc["id"], "amount": amount, "currency": "USD", "stage": stage, "probability": prob,
            "close_date": f"2026-{rng.randint(4, 6):02d}-{rng.randint(1, 30):02d}",
            "created_at": iso(utc(2025, rng.randint(9, 12), rng.randint(1, 28), rng.randint(8, 18))),
            "sourced_by": {"name": sdr[0], "email": email(sdr[1])},
            "line_items": [{"sku": sku, "name": name, "unit_price": price, "quantity": q} for sku, name, price, q in items],
            "next_step": rng.choice(NEXT_STEPS),
            "notes": rng.choice(ACCOUNT_NOTES),
        })
    pages = [deals[0:25], deals[25:50], deals[50:]]
    base = {"status": "open", "close_date_from": "2026-04-01", "close_date_to": "2026-06-30"}
    responses = []
    for p, chunk in enumerate(pages):
        args = dict(base) if p == 0 else {**base, "page_token": f"pg_{p + 1}_c3a9"}
        nxt = f"pg_{p + 2}_c3a9" if p + 1 < len(pages) else None
        responses.append({"args": args, "result": {"deals": chunk, "next_page_token": nxt}})
    used = sorted({d["account_id"] for d in deals})
    agg = {}
    for d in deals:
        o = accounts[d["account_id"]]["owner"]["name"]
        a = agg.setdefault(o, {"owner": o, "deals": 0, "total": 0, "weighted": 0})
        a["deals"] += 1
        a["total"] += d["amount"]
        a["weighted"] += d["amount"] * d["probability"] // 100
    expected = sorted(agg.values(), key=lambda a: (-a["total"], a["owner"]))
    deal_schema = obj({
        "id": {"type": "string"}, "name": {"type": "string"}, "account_id": {"type": "string"}, "amount": {"type": "number"},
        "currency": {"type": "string"}, "stage": {"type": "string"}, "probability": {"type": "integer"},
        "close_date": {"type": "string"}, "created_at": {"type": "string"},
        "sourced_by": obj({"name": {"type": "string"}, "email": {"type": "string"}}),
        "line_items": arr(obj({"sku": {"type": "string"}, "name": {"type": "string"}, "unit_price": {"type": "number"}, "quantity": {"type": "integer"}})),
        "next_step": {"type": "string"}, "notes": {"type": "string"},
    }, ["id", "account_id", "amount", "currency", "stage", "probability", "close_date"])
    tools = [
        {"name": "list_deals",
         "description": "List CRM deals (opportunities), 25 per page. Pass the returned next_page_token to get the next page; it is null on the last page. Deals carry their account id; the account owner is on the account.",
         "inputSchema": obj({"status": s("Deal status", enum=["open", "won", "lost"]),
                             "close_date_from": s("Earliest expected close date, YYYY-MM-DD (inclusive)"),
                             "close_date_to": s("Latest expected close date, YYYY-MM-DD (inclusive)"),
                             "page_token": s("Token from the previous page")}, ["status"], additionalProperties=False),
         "outputSchema": obj({"deals": arr(deal_schema), "next_page_token": {"type": ["string", "null"]}}, ["deals", "next_page_token"]),
         "fixture": {"responses": responses}},
        {**GET_ACCOUNT, "fixture": {"responses": [{"args": {"account_id": a}, "result": accounts[a]} for a in used]}},
        {"name": "search_contacts", "description": "Search CRM contacts by name, email or account.",
         "inputSchema": obj({"query": s("Free text"), "account_id": s("Only contacts of this account")}, additionalProperties=False)},
    ]
    top = expected[0]
    return {
        "name": "crm-pipeline-by-owner",
        "description": "CRM: three sequential pages of deals (~70 deals), then the accounts of those deals fanned out (~17 x 1.5 KB) to attribute each deal to its account owner; direct mode resends every page and account on each later turn.",
        "task": "What is the total open pipeline (sum of deal amounts, USD) of deals expected to close in Q2 2026 (2026-04-01 to 2026-06-30), per account owner? Also give the number of deals and the probability-weighted total (amount x probability / 100, rounded down per deal). Sort by total, largest first.",
        "tools": tools,
        "program": prog("""
            const deals = [];
            let page_token = undefined;
            do {
              const args = { status: "open", close_date_from: "2026-04-01", close_date_to: "2026-06-30" };
              const page = await tools.list_deals(page_token ? { ...args, page_token } : args);
              deals.push(...page.deals);
              page_token = page.next_page_token;
            } while (page_token);
            const ids = [...new Set(deals.map((d) => d.account_id))];
            const accounts = await Promise.all(ids.map((account_id) => tools.get_account({ account_id })));
            const ownerOf = new Map(accounts.map((a) => [a.id, a.owner.name]));
            const byOwner = new Map();
            for (const d of deals) {
              const owner = ownerOf.get(d.account_id);
              const row = byOwner.get(owner) ?? { owner, deals: 0, total: 0, weighted: 0 };
              row.deals += 1;
              row.total += d.amount;
              row.weighted += Math.floor((d.amount * d.probability) / 100);
              byOwner.set(owner, row);
            }
            return [...byOwner.values()].sort((a, b) => b.total - a.total || a.owner.localeCompare(b.owner));
        """),
        "expected": expected,
        "answer_contains": [top["owner"], str(top["total"]), expected[-1]["owner"]],
    }


CONTACT_TITLES_DM = ["VP of Clinical Operations", "Chief Information Officer", "Director of IT Infrastructure",
                     "Head of Revenue Cycle", "Chief Medical Information Officer", "Director, Patient Access",
                     "VP Finance", "Head of Procurement"]
CONTACT_TITLES_IC = ["Systems Analyst", "Clinical Informatics Specialist", "IT Project Manager", "Billing Supervisor",
                     "Procurement Specialist", "Security Engineer", "Nurse Informaticist", "Executive Assistant"]
FIRST = ["Maya", "Ethan", "Olivia", "Samuel", "Amara", "Lucas", "Zoe", "Mateo", "Nora", "Isaac", "Leila", "Owen",
         "Clara", "Felix", "Ruth", "Julian", "Imani", "Victor", "Hana", "Caleb", "Selin", "Diego", "Esther", "Arjun"]
LAST = ["Hughes", "Delgado", "Nakamura", "Whitfield", "Osei", "Brennan", "Kovacs", "Rahman", "Lindgren", "Moreau",
        "Abara", "Castellanos", "Feld", "Ng", "Sorensen", "Quintero", "Mbeki", "Larsen", "Haddad", "Ibarra"]
CONTACT_NOTES = ["Prefers email over calls; copy her assistant on scheduling.",
                 "Met at HIMSS; interested in the analytics add-on for readmission reporting.",
                 "Signed the original contract; key voice in the renewal.",
                 "Evaluating a competitor for the patient portal integration.",
                 "Asked for a reference call with another hospital system.",
                 "Owns the budget for next fiscal year's infrastructure spend."]


def scenario_crm_stale_contacts():
    rng = random.Random(7)
    accounts = make_accounts(rng)
    health = [a for a in sorted(accounts.values(), key=lambda a: a["id"]) if a["industry"] == "Healthcare"]
    contacts_by_acc = {}
    for a in health:
        cs = []
        for k in range(rng.randint(7, 12)):
            fn, ln = rng.choice(FIRST), rng.choice(LAST)
            dm = rng.random() < 0.45
            title = rng.choice(CONTACT_TITLES_DM if dm else CONTACT_TITLES_IC)
            last = None if rng.random() < 0.1 else iso(utc(2025, 6, 1) + timedelta(days=rng.randint(0, 275), hours=rng.randint(8, 17)))
            cs.append({
                "id": f"con_{a['id'][4:]}_{k + 1:02d}", "name": f"{fn} {ln}", "title": title,
                "email": f"{fn.lower()}.{ln.lower()}@{a['domain']}", "phone": f"+1-{rng.randint(201, 989)}-555-{rng.randint(100, 999):04d}",
                "account_id": a["id"], "last_contacted_at": last, "do_not_contact": rng.random() < 0.08,
                "owner_email": a["owner"]["email"], "notes": rng.choice(CONTACT_NOTES),
            })
        contacts_by_acc[a["id"]] = cs
    cutoff = "2025-12-09T00:00:00Z"
    import re
    dm_re = re.compile(r"\b(VP|Vice President|Director|Chief|Head)\b")
    rows = []
    for a in health:
        for c in contacts_by_acc[a["id"]]:
            if dm_re.search(c["title"]) and not c["do_not_contact"] and (c["last_contacted_at"] is None or c["last_contacted_at"] < cutoff):
                rows.append({"contact": c["name"], "title": c["title"], "email": c["email"], "account": a["name"],
                             "arr": a["arr"], "last_contacted_at": c["last_contacted_at"]})
    rows.sort(key=lambda r: (-r["arr"], r["contact"]))
    contact_schema = obj({"id": {"type": "string"}, "name": {"type": "string"}, "title": {"type": "string"},
                          "email": {"type": "string"}, "phone": {"type": "string"}, "account_id": {"type": "string"},
                          "last_contacted_at": {"type": ["string", "null"]}, "do_not_contact": {"type": "boolean"},
                          "owner_email": {"type": "string"}, "notes": {"type": "string"}},
                         ["id", "name", "title", "email", "account_id", "last_contacted_at", "do_not_contact"])
    tools = [
        {"name": "list_accounts", "description": "List CRM accounts, optionally filtered by industry, with full account details.",
         "inputSchema": obj({"industry": s("Industry, e.g. Healthcare"), "owner_email": s("Only accounts owned by this rep")}, additionalProperties=False),
         "outputSchema": obj({"accounts": arr(ACCOUNT_SCHEMA)}, ["accounts"]),
         "fixture": {"responses": [{"args": {"industry": "Healthcare"}, "result": {"accounts": health}}]}},
        {"name": "search_contacts", "description": "Search CRM contacts by free text and/or account; returns every matching contact with its details.",
         "inputSchema": obj({"query": s("Free text over name, title and email"), "account_id": s("Only contacts of this account")}, additionalProperties=False),
         "outputSchema": obj({"contacts": arr(contact_schema)}, ["contacts"]),
         "fixture": {"responses": [{"args": {"account_id": k}, "result": {"contacts": v}} for k, v in contacts_by_acc.items()]}},
        {**GET_ACCOUNT},
    ]
    return {
        "name": "crm-stale-contacts",
        "description": "CRM: list the Healthcare accounts, fan out a contact search per account (~60 contacts), filter decision-makers not contacted in 90 days; a join and a filter over mid-sized payloads.",
        "task": "Today is 2026-03-09. For our Healthcare accounts, list the decision-makers (title contains VP, Vice President, Director, Chief or Head) who have not been contacted in the last 90 days (last contact before 2025-12-09, or never), skipping anyone marked do-not-contact. Give name, title, email, account, the account's ARR and the last contact date, sorted by ARR (largest first), then name.",
        "tools": tools,
        "program": prog("""
            const { accounts } = await tools.list_accounts({ industry: "Healthcare" });
            const results = await Promise.all(accounts.map((a) => tools.search_contacts({ account_id: a.id })));
            const cutoff = "2025-12-09T00:00:00Z";
            const decisionMaker = /\\b(VP|Vice President|Director|Chief|Head)\\b/;
            const rows = [];
            accounts.forEach((a, k) => {
              for (const c of results[k].contacts) {
                const stale = c.last_contacted_at === null || c.last_contacted_at < cutoff;
                if (decisionMaker.test(c.title) && stale && !c.do_not_contact) {
                  rows.push({ contact: c.name, title: c.title, email: c.email, account: a.name, arr: a.arr, last_contacted_at: c.last_contacted_at });
                }
              }
            });
            return rows.sort((x, y) => y.arr - x.arr || x.contact.localeCompare(y.contact));
        """),
        "expected": rows,
        "answer_contains": [rows[0]["contact"], rows[-1]["contact"], rows[0]["account"]],
    }


# ---------------------------------------------------------------- calendar

MEETINGS = [
    ("Weekly sync: Payments platform", "Standing agenda: incidents from last week, roadmap check-in, hiring updates. Add topics to the running doc before Monday noon."),
    ("1:1", "Career conversation and feedback on the Q1 goals. Bring the draft of the promotion packet if it is ready."),
    ("Design review: ledger v2 schema", "Review of the proposed posting table split and the migration plan. Pre-read: RFC-142 in the engineering wiki; comments due before the meeting."),
    ("Interview: Senior Backend Engineer (system design)", "Panel interview, system design round. Scorecard in the ATS; please submit feedback within 24 hours."),
    ("Customer call: Harborview Health", "Escalation follow-up on delayed payouts. Account owner will lead; engineering to explain the fix and the monitoring we added."),
    ("Sprint planning", "Plan sprint 14. Tickets must be estimated beforehand; carry-over from sprint 13 is listed in the board's Ready column."),
    ("Incident review: INC-2291", "Blameless post-incident review of the webhook delivery outage on 2026-03-04. Timeline and contributing factors drafted in the doc."),
    ("Focus block", "No meetings, heads-down on the reconciliation job rewrite."),
    ("Vendor demo: observability platform", "Demo of tracing and log correlation features; compare against the current stack. Procurement will join for pricing."),
    ("Architecture guild", "Monthly guild meeting. Topic this time: idempotency keys across services and the outbox pattern."),
    ("Lunch & learn: Rust async pitfalls", "Internal talk, recorded. Pizza in the big room for those on site."),
    ("Quarterly business review prep", "Collect metrics for the QBR deck: uptime, incident count, delivered roadmap items, customer NPS."),
]
TEAM = [PEOPLE[2], PEOPLE[5], PEOPLE[8], PEOPLE[11]]


def scenario_calendar_slot():
    rng = random.Random(8)
    cal = {}
    for p in TEAM:
        evs = []
        for day in range(16, 21):
            t = utc(2026, 3, day, 8)
            while True:
                t += timedelta(minutes=30 * rng.choice([0, 1, 2, 2, 3]))
                dur = rng.choice([30, 30, 60, 60, 90])
                if t + timedelta(minutes=dur) > utc(2026, 3, day, 18):
                    break
                title, desc = rng.choice(MEETINGS)
                others = rng.sample([q for q in PEOPLE if q != p], rng.randint(1, 4))
                status = "cancelled" if rng.random() < 0.08 else "confirmed"
                evs.append({
                    "id": f"ev{rng.getrandbits(40):010x}", "status": status, "summary": title, "description": desc,
                    "location": rng.choice(["Zoom", "Room Fjord (3F)", "Room Atlas (2F)", "Google Meet", ""]),
                    "start": {"dateTime": iso(t)}, "end": {"dateTime": iso(t + timedelta(minutes=dur))},
                    "organizer": {"email": email(rng.choice([p] + others)[1])},
                    "attendees": [{"email": email(q[1]), "responseStatus": rng.choice(["accepted", "accepted", "tentative", "needsAction"])} for q in [p] + others],
                    "recurringEventId": None if rng.random() < 0.6 else f"rec{rng.getrandbits(24):06x}",
                })
                t += timedelta(minutes=dur)
        cal[email(p[1])] = evs
    # Carve the one common free hour (Wednesday 14:30) and leave a cancelled event in it as a trap.
    w0, w1 = "2026-03-18T14:30:00Z", "2026-03-18T15:30:00Z"
    for k, (e_, evs) in enumerate(cal.items()):
        evs[:] = [e for e in evs if e["status"] == "cancelled" or not (e["start"]["dateTime"] < w1 and w0 < e["end"]["dateTime"])]
        if k == 1:
            title, desc = MEETINGS[6]
            evs.append({"id": "ev7f3a9c21d0", "status": "cancelled", "summary": title, "description": desc, "location": "Zoom",
                        "start": {"dateTime": w0}, "end": {"dateTime": "2026-03-18T15:00:00Z"},
                        "organizer": {"email": e_}, "attendees": [{"email": e_, "responseStatus": "declined"}], "recurringEventId": None})
            evs.sort(key=lambda e: e["start"]["dateTime"])
    busy = [(e["start"]["dateTime"], e["end"]["dateTime"]) for evs in cal.values() for e in evs if e["status"] != "cancelled"]
    answer = None
    for day in range(16, 21):
        for half in range(0, 15):
            st = utc(2026, 3, day, 9) + timedelta(minutes=30 * half)
            en = st + timedelta(minutes=60)
            if all(not (iso(st) < b[1] and b[0] < iso(en)) for b in busy):
                answer = {"start": iso(st), "end": iso(en)}
                break
        if answer:
            break
    assert answer and answer["start"] > "2026-03-17", answer
    ev_schema = obj({"id": {"type": "string"}, "status": {"type": "string", "enum": ["confirmed", "tentative", "cancelled"]},
                     "summary": {"type": "string"}, "description": {"type": "string"}, "location": {"type": "string"},
                     "start": obj({"dateTime": {"type": "string"}}, ["dateTime"]), "end": obj({"dateTime": {"type": "string"}}, ["dateTime"]),
                     "organizer": obj({"email": {"type": "string"}}),
                     "attendees": arr(obj({"email": {"type": "string"}, "responseStatus": {"type": "string"}})),
                     "recurringEventId": {"type": ["string", "null"]}}, ["id", "status", "start", "end"])
    rng_args = {"time_min": "2026-03-16T00:00:00Z", "time_max": "2026-03-21T00:00:00Z"}
    tools = [
        {"name": "list_events", "description": "Events of one calendar between two instants (RFC 3339), expanded from recurrences, ordered by start time. Cancelled occurrences are included with status `cancelled`.",
         "inputSchema": obj({"calendar_id": s("Calendar id: the owner's email"), "time_min": s("Start of the window (RFC 3339)"),
                             "time_max": s("End of the window (RFC 3339, exclusive)")}, ["calendar_id", "time_min", "time_max"], additionalProperties=False),
         "outputSchema": obj({"calendar_id": {"type": "string"}, "time_zone": {"type": "string"}, "events": arr(ev_schema)}, ["calendar_id", "events"]),
         "fixture": {"responses": [{"args": {"calendar_id": e, **rng_args}, "result": {"calendar_id": e, "time_zone": "UTC", "events": v}} for e, v in cal.items()]}},
        {"name": "create_event", "description": "Create an event on a calendar and invite attendees.",
         "inputSchema": obj({"calendar_id": s("Calendar id"), "summary": s("Title"), "start": s("RFC 3339"), "end": s("RFC 3339"),
                             "attendees": arr({"type": "string"}, "Attendee emails"), "description": s("Body")}, ["calendar_id", "summary", "start", "end"])},
    ]
    emails = [email(p[1]) for p in TEAM]
    return {
        "name": "calendar-team-slot",
        "description": "Calendar: four people's events for a week (~30 events each, with descriptions and attendee lists) intersected into the earliest common free hour; all the data only matters as busy intervals.",
        "task": f"Find the earliest 60-minute slot next week (Monday 2026-03-16 to Friday 2026-03-20), starting on the hour or half hour between 09:00 and 17:00 UTC (ending by 17:00), when all four of {', '.join(emails)} are free. Ignore cancelled events. Don't create the event, just tell me the slot.",
        "tools": tools,
        "program": prog(f"""
            const people = {json_list(emails)};
            const window = {{ time_min: "2026-03-16T00:00:00Z", time_max: "2026-03-21T00:00:00Z" }};
            const cals = await Promise.all(people.map((calendar_id) => tools.list_events({{ calendar_id, ...window }})));
            const busy = cals.flatMap((c) => c.events)
              .filter((e) => e.status !== "cancelled")
              .map((e) => [Date.parse(e.start.dateTime), Date.parse(e.end.dateTime)]);
            const HOUR = 3600_000, HALF = HOUR / 2;
            for (let day = 16; day <= 20; day++) {{
              const open = Date.parse(`2026-03-${{day}}T09:00:00Z`), close = Date.parse(`2026-03-${{day}}T17:00:00Z`);
              for (let start = open; start + HOUR <= close; start += HALF) {{
                const end = start + HOUR;
                if (busy.every(([b0, b1]) => b1 <= start || b0 >= end)) {{
                  const fmt = (t) => new Date(t).toISOString().replace(".000Z", "Z");
                  return {{ start: fmt(start), end: fmt(end) }};
                }}
              }}
            }}
            return null;
        """),
        "expected": answer,
        "answer_contains": [answer["start"], answer["end"]],
    }


def json_list(xs):
    import json
    return json.dumps(xs)


# ---------------------------------------------------------------- metrics

SERVICES = [
    ("api-gateway", "edge", 1, 180), ("checkout-api", "payments", 1, 240), ("payments-core", "payments", 1, 160),
    ("ledger-writer", "payments", 1, 90), ("webhook-dispatcher", "integrations", 2, 300), ("search-api", "discovery", 2, 120),
    ("catalog-service", "discovery", 2, 70), ("auth-service", "identity", 1, 60), ("notifications", "growth", 3, 400),
    ("reporting-api", "data", 3, 900), ("fx-rates", "payments", 2, 40), ("user-profile", "identity", 2, 55),
]
SERVICE_SCHEMA = obj({"name": {"type": "string"}, "team": {"type": "string"}, "tier": {"type": "integer"},
                      "language": {"type": "string"}, "runtime": {"type": "string"}, "owner_channel": {"type": "string"},
                      "slo": obj({"availability_pct": {"type": "number"}, "latency_p99_ms": {"type": "number"}}),
                      "repository": {"type": "string"}, "dashboards": arr({"type": "string"})},
                     ["name", "team", "tier", "slo"])


def service_list(rng):
    out = []
    for name, team, tier, p99 in SERVICES:
        out.append({"name": name, "team": team, "tier": tier,
                    "language": rng.choice(["Go", "Rust", "Kotlin", "TypeScript"]), "runtime": "kubernetes (eks-prod-1)",
                    "owner_channel": f"#team-{team}",
                    "slo": {"availability_pct": {1: 99.95, 2: 99.9, 3: 99.5}[tier], "latency_p99_ms": p99 * 2},
                    "repository": f"github.com/northwind/{name}",
                    "dashboards": [f"https://grafana.northwind.io/d/{name}-overview", f"https://grafana.northwind.io/d/{name}-slo"]})
    return out


LIST_SERVICES = {"name": "list_services", "description": "Services of an environment from the service catalog, with team, tier and SLO targets.",
                 "inputSchema": obj({"environment": s("Environment", enum=["production", "staging"])}, ["environment"], additionalProperties=False),
                 "outputSchema": obj({"environment": {"type": "string"}, "services": arr(SERVICE_SCHEMA)}, ["environment", "services"])}
QUERY_METRIC = {"name": "query_metric",
                "description": "Time series of one metric of one service between start (inclusive) and end (exclusive) at the given step. Counters are per step (not cumulative).",
                "inputSchema": obj({"service": s("Service name"), "metric": s("Metric name", enum=["http_latency_p99_ms", "http_latency_p50_ms", "http_requests", "http_errors_5xx", "cpu_utilization"]),
                                    "start": s("RFC 3339"), "end": s("RFC 3339"), "step": s("Resolution", enum=["5m", "1h", "1d"])},
                                   ["service", "metric", "start", "end", "step"], additionalProperties=False),
                "outputSchema": obj({"service": {"type": "string"}, "metric": {"type": "string"}, "unit": {"type": "string"}, "step": {"type": "string"},
                                     "points": arr(obj({"t": {"type": "string"}, "v": {"type": "number"}}, ["t", "v"]))}, ["service", "metric", "points"])}
WEEK = {"start": "2026-03-02T00:00:00Z", "end": "2026-03-09T00:00:00Z", "step": "1h"}


def hours():
    return [utc(2026, 3, 2) + timedelta(hours=h) for h in range(168)]


def scenario_metrics_spike():
    rng = random.Random(9)
    services = service_list(rng)
    series = {}
    spike_plan = {"webhook-dispatcher": (61, 5.8), "ledger-writer": (100, 4.3), "checkout-api": (130, 3.1)}
    for name, _, _, p99 in SERVICES:
        pts = []
        for h, t in enumerate(hours()):
            daily = 1 + 0.25 * (1 if 13 <= t.hour <= 20 else 0)
            v = p99 * daily * rng.uniform(0.85, 1.15)
            if rng.random() < 0.03:
                v *= rng.uniform(1.3, 2.2)
            if name in spike_plan and spike_plan[name][0] <= h < spike_plan[name][0] + 3:
                v = p99 * spike_plan[name][1] * (1.0 if h == spike_plan[name][0] + 1 else 0.7)
            pts.append({"t": iso(t), "v": round(v)})
        series[name] = pts
    rows = []
    for name, pts in series.items():
        vals = [p["v"] for p in pts]
        med = statistics.median(vals)
        peak = max(pts, key=lambda p: p["v"])  # first max
        rows.append({"service": name, "median_ms": med, "peak_ms": peak["v"], "peak_at": peak["t"],
                     "ratio": int(peak["v"] / med * 100 + 0.5) / 100})
    rows.sort(key=lambda r: (-r["ratio"], r["service"]))
    expected = rows[:3]
    tools = [
        {**LIST_SERVICES, "fixture": {"responses": [{"args": {"environment": "production"}, "result": {"environment": "production", "services": services}}]}},
        {**QUERY_METRIC, "fixture": {"responses": [
            {"args": {"service": k, "metric": "http_latency_p99_ms", **WEEK},
             "result": {"service": k, "metric": "http_latency_p99_ms", "unit": "ms", "step": "1h", "points": v}} for k, v in series.items()]}},
    ]
    return {
        "name": "metrics-p99-spike",
        "description": "Metrics: 12 services x 168 hourly p99 points (~80 KB of series) reduced to a ratio per service; the canonical case where intermediate data dwarfs the answer.",
        "task": "Over the week 2026-03-02T00:00Z to 2026-03-09T00:00Z (hourly p99 latency, metric http_latency_p99_ms), which three production services had the biggest latency spike relative to their own weekly median (peak / median)? For each give the median, the peak value and when it happened, and the ratio rounded to 2 decimals.",
        "tools": tools,
        "program": prog("""
            const { services } = await tools.list_services({ environment: "production" });
            const week = { start: "2026-03-02T00:00:00Z", end: "2026-03-09T00:00:00Z", step: "1h" };
            const series = await Promise.all(
              services.map((s) => tools.query_metric({ service: s.name, metric: "http_latency_p99_ms", ...week })),
            );
            const median = (xs) => {
              const v = [...xs].sort((a, b) => a - b), m = v.length >> 1;
              return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
            };
            const rows = series.map(({ service, points }) => {
              const med = median(points.map((p) => p.v));
              const peak = points.reduce((best, p) => (p.v > best.v ? p : best));
              return { service, median_ms: med, peak_ms: peak.v, peak_at: peak.t, ratio: Math.round((peak.v / med) * 100) / 100 };
            });
            rows.sort((a, b) => b.ratio - a.ratio || a.service.localeCompare(b.service));
            return rows.slice(0, 3);
        """),
        "expected": expected,
        "answer_contains": [expected[0]["service"], str(expected[0]["peak_ms"]), expected[0]["peak_at"], expected[1]["service"]],
    }


def scenario_availability_slo():
    rng = random.Random(10)
    services = service_list(rng)
    tier1 = [x for x in services if x["tier"] == 1]
    bad = {"checkout-api": (90, 6, 0.09), "auth-service": (40, 3, 0.2)}  # start hour, hours, error share
    responses_req, responses_err = [], []
    totals = {}
    for x in tier1:
        name = x["name"]
        base = rng.randint(20_000, 90_000)
        req_pts, err_pts = [], []
        for h, t in enumerate(hours()):
            r = int(base * (0.55 + 0.45 * (1 if 8 <= t.hour <= 21 else 0)) * rng.uniform(0.9, 1.1))
            e = int(r * rng.uniform(0.00005, 0.0003))
            if name in bad and bad[name][0] <= h < bad[name][0] + bad[name][1]:
                e = int(r * bad[name][2])
            req_pts.append({"t": iso(t), "v": r})
            err_pts.append({"t": iso(t), "v": e})
        for metric, pts, acc in (("http_requests", req_pts, responses_req), ("http_errors_5xx", err_pts, responses_err)):
            acc.append({"args": {"service": name, "metric": metric, **WEEK},
                        "result": {"service": name, "metric": metric, "unit": "requests", "step": "1h", "points": pts}})
        totals[name] = (sum(p["v"] for p in req_pts), sum(p["v"] for p in err_pts), x["slo"]["availability_pct"])
    rows = []
    for name, (req, err, slo) in totals.items():
        avail = int((1 - err / req) * 100 * 1000 + 0.5) / 1000
        if avail < slo:
            rows.append({"service": name, "availability_pct": avail, "slo_pct": slo, "requests": req, "errors_5xx": err})
    rows.sort(key=lambda r: (r["availability_pct"], r["service"]))
    assert sorted(r["service"] for r in rows) == ["auth-service", "checkout-api"], rows
    tools = [
        {**LIST_SERVICES, "fixture": {"responses": [{"args": {"environment": "production"}, "result": {"environment": "production", "services": services}}]}},
        {**QUERY_METRIC, "fixture": {"responses": responses_req + responses_err}},
    ]
    return {
        "name": "availability-slo-breach",
        "description": "Metrics: two hourly counters (requests, 5xx errors) for each tier-1 service over a week (10 series x 168 points), summed and compared with the SLO; fan-out of many medium-sized results.",
        "task": "For the tier-1 production services, compute last week's availability (2026-03-02T00:00Z to 2026-03-09T00:00Z, hourly http_requests and http_errors_5xx; availability = 1 - errors/requests, as a percentage rounded to 3 decimals). Which of them are below their availability SLO? Give the availability, the SLO, and the request and error totals, worst first.",
        "tools": tools,
        "program": prog("""
            const { services } = await tools.list_services({ environment: "production" });
            const week = { start: "2026-03-02T00:00:00Z", end: "2026-03-09T00:00:00Z", step: "1h" };
            const sum = (r) => r.points.reduce((acc, p) => acc + p.v, 0);
            const tier1 = services.filter((s) => s.tier === 1);
            const rows = await Promise.all(tier1.map(async (s) => {
              const [req, err] = await Promise.all([
                tools.query_metric({ service: s.name, metric: "http_requests", ...week }),
                tools.query_metric({ service: s.name, metric: "http_errors_5xx", ...week }),
              ]);
              const requests = sum(req), errors_5xx = sum(err);
              const availability_pct = Math.round((1 - errors_5xx / requests) * 100 * 1000) / 1000;
              return { service: s.name, availability_pct, slo_pct: s.slo.availability_pct, requests, errors_5xx };
            }));
            return rows
              .filter((r) => r.availability_pct < r.slo_pct)
              .sort((a, b) => a.availability_pct - b.availability_pct || a.service.localeCompare(b.service));
        """),
        "expected": rows,
        "answer_contains": ["auth-service", "checkout-api", str(rows[0]["availability_pct"])],
    }


# ---------------------------------------------------------------- where code mode should not win

def scenario_single_lookup():
    status = {"service": "payments-core", "environment": "production", "status": "degraded",
              "since": "2026-03-09T07:42:00Z", "active_incident": "INC-2304",
              "summary": "Elevated latency on card authorisations in eu-west-1", "version": "2026.03.06-2"}
    return {
        "name": "single-status-lookup",
        "description": "Control: one small call answers the task; code mode pays for a program and a second turn and should not win here.",
        "task": "Is payments-core healthy in production right now?",
        "tools": [
            {"name": "get_service_status", "description": "Current health of one service in one environment, with the active incident if any.",
             "inputSchema": obj({"service": s("Service name"), "environment": s("Environment", enum=["production", "staging"])},
                                ["service", "environment"], additionalProperties=False),
             "outputSchema": obj({"service": {"type": "string"}, "environment": {"type": "string"},
                                  "status": {"type": "string", "enum": ["healthy", "degraded", "down"]},
                                  "since": {"type": "string"}, "active_incident": {"type": ["string", "null"]},
                                  "summary": {"type": "string"}, "version": {"type": "string"}}, ["service", "status"]),
             "fixture": {"responses": [{"args": {"service": "payments-core", "environment": "production"}, "result": status}]}},
            {**LIST_SERVICES},
        ],
        "program": prog("""
            const s = await tools.get_service_status({ service: "payments-core", environment: "production" });
            return { status: s.status, since: s.since, incident: s.active_incident, summary: s.summary };
        """),
        "expected": {"status": "degraded", "since": "2026-03-09T07:42:00Z", "incident": "INC-2304",
                     "summary": "Elevated latency on card authorisations in eu-west-1"},
        "answer": "No: payments-core is degraded in production since 2026-03-09T07:42:00Z (incident INC-2304): elevated latency on card authorisations in eu-west-1.",
        "answer_contains": ["degraded", "INC-2304"],
    }


def scenario_two_tiny_calls():
    def wx(city, temp, cond, wind):
        return {"city": city, "observed_at": "2026-03-09T12:00:00Z", "temperature_c": temp, "conditions": cond, "wind_kph": wind}
    schema = obj({"city": {"type": "string"}, "observed_at": {"type": "string"}, "temperature_c": {"type": "number"},
                  "conditions": {"type": "string"}, "wind_kph": {"type": "number"}}, ["city", "temperature_c", "conditions"])
    return {
        "name": "two-city-weather",
        "description": "Control: two tiny independent calls; direct mode issues both in one turn, so code mode saves nothing and adds its program.",
        "task": "Is it warmer in Lisbon or in Oslo right now, and by how much?",
        "tools": [
            {"name": "get_current_weather", "description": "Current weather observation for a city.",
             "inputSchema": obj({"city": s("City name")}, ["city"], additionalProperties=False), "outputSchema": schema,
             "fixture": {"responses": [{"args": {"city": "Lisbon"}, "result": wx("Lisbon", 17.5, "partly cloudy", 14)},
                                       {"args": {"city": "Oslo"}, "result": wx("Oslo", -2.5, "light snow", 9)}]}},
            {"name": "get_forecast", "description": "Daily forecast for a city for the next N days.",
             "inputSchema": obj({"city": s("City name"), "days": i("Days, 1-10", minimum=1, maximum=10)}, ["city"], additionalProperties=False)},
        ],
        "program": prog("""
            const [lis, osl] = await Promise.all([
              tools.get_current_weather({ city: "Lisbon" }),
              tools.get_current_weather({ city: "Oslo" }),
            ]);
            const warmer = lis.temperature_c >= osl.temperature_c ? lis : osl;
            return { warmer: warmer.city, lisbon_c: lis.temperature_c, oslo_c: osl.temperature_c, difference_c: Math.abs(lis.temperature_c - osl.temperature_c) };
        """),
        "expected": {"warmer": "Lisbon", "lisbon_c": 17.5, "oslo_c": -2.5, "difference_c": 20},
        "answer": "Lisbon is warmer: 17.5 °C against -2.5 °C in Oslo, 20 °C warmer.",
        "answer_contains": ["Lisbon", "20"],
    }


TICKETS = [
    {"id": "T-88412", "subject": "Charged twice for March", "customer": "Lena Fischer <lena@brightcart.de>",
     "created_at": "2026-03-08T09:14:00Z",
     "body": "Hi, I just looked at our card statement and the March subscription shows up twice (2 x 249 EUR on the 1st). We only have one workspace. Can you look into what happened? Our bookkeeper needs the invoice to match what was actually paid, so please sort out whatever is needed on your side."},
    {"id": "T-88419", "subject": "Question about refund policy wording", "customer": "Omar Haddad <omar@soukdigital.ae>",
     "created_at": "2026-03-08T11:02:00Z",
     "body": "We are updating our own terms and wanted to copy the structure of your refund policy page. Is it OK to reference it, and is the 14-day window the same for annual plans? Nothing is wrong with our account, this is just for our legal team."},
    {"id": "T-88430", "subject": "Export to CSV broken", "customer": "Ben Carter <ben@pinecrest.co>",
     "created_at": "2026-03-08T15:47:00Z",
     "body": "Since yesterday the CSV export of the orders report downloads an empty file. Tried Chrome and Firefox. This is urgent for our weekly inventory meeting tomorrow morning."},
]


def scenario_refund_judgement():
    listing = [{k: t[k] for k in ("id", "subject", "customer", "created_at")} for t in TICKETS]
    tk_schema = obj({"id": {"type": "string"}, "subject": {"type": "string"}, "customer": {"type": "string"},
                     "created_at": {"type": "string"}, "body": {"type": "string"}}, ["id", "subject", "body"])
    return {
        "name": "refund-ticket-judgement",
        "description": "Control: three short tickets whose meaning needs reading (the real refund request never says 'refund'; the one that says it is not one); a program can only approximate the judgement with a keyword rule, so code mode has nothing to save and direct reading is the natural plan.",
        "task": "Three new support tickets came in on 2026-03-08. Which of them is actually asking for money back (a refund or a reversed charge)? Read them and tell me the ticket id and why.",
        "tools": [
            {"name": "list_tickets", "description": "Support tickets in a queue (without bodies), newest last.",
             "inputSchema": obj({"queue": s("Queue name, e.g. billing"), "status": s("Ticket status", enum=["new", "open", "pending", "solved"])},
                                ["queue", "status"], additionalProperties=False),
             "outputSchema": obj({"tickets": arr(obj({"id": {"type": "string"}, "subject": {"type": "string"}, "customer": {"type": "string"}, "created_at": {"type": "string"}}, ["id", "subject"]))}, ["tickets"]),
             "fixture": {"responses": [{"args": {"queue": "billing", "status": "new"}, "result": {"tickets": listing}}]}},
            {"name": "get_ticket", "description": "One support ticket with its body.",
             "inputSchema": obj({"id": s("Ticket id")}, ["id"], additionalProperties=False), "outputSchema": tk_schema,
             "fixture": {"responses": [{"args": {"id": t["id"]}, "result": t} for t in TICKETS]}},
        ],
        "program": prog("""
            const { tickets } = await tools.list_tickets({ queue: "billing", status: "new" });
            const full = await Promise.all(tickets.map((t) => tools.get_ticket({ id: t.id })));
            // A keyword rule is all a program can do: a duplicate charge asks for money back,
            // while a mere mention of the refund *policy* does not.
            const wantsMoneyBack = (t) =>
              /charged twice|double charge|money back|reimburse|refund (me|us|the)/i.test(`${t.subject} ${t.body}`);
            const hits = full.filter(wantsMoneyBack);
            return hits.map((t) => ({ id: t.id, subject: t.subject }));
        """),
        "expected": [{"id": "T-88412", "subject": "Charged twice for March"}],
        "answer": "T-88412 (\"Charged twice for March\") is the refund request: the customer was billed 2 x 249 EUR for one workspace and needs the duplicate charge reversed. T-88419 only asks about the wording of the refund policy, and T-88430 is a broken CSV export.",
        "answer_contains": ["T-88412"],
        "direct_turns": [
            [{"tool": "list_tickets", "args": {"queue": "billing", "status": "new"}}],
            [{"tool": "get_ticket", "args": {"id": t["id"]}} for t in TICKETS],
        ],
    }


def main():
    for num, fn in [(4, scenario_oncall_p1), (5, scenario_regression_triage), (6, scenario_crm_pipeline), (7, scenario_crm_stale_contacts),
                    (8, scenario_calendar_slot), (9, scenario_metrics_spike), (10, scenario_availability_slo),
                    (13, scenario_single_lookup), (14, scenario_two_tiny_calls), (15, scenario_refund_judgement)]:
        print(write(num, fn()))


if __name__ == "__main__":
    main()
