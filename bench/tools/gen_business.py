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


#@@MORE@@

def main():
    for num, fn in [(4, scenario_oncall_p1), (5, scenario_regression_triage), (6, scenario_crm_pipeline), (7, scenario_crm_stale_contacts)]:
        print(write(num, fn()))


if __name__ == "__main__":
    main()
