#!/usr/bin/env python3
"""Generate the scenarios over the large tool set (bench/tools/catalog_mcp.py, 134 tools from
seven MCP servers), where finding the right 2-3 tools matters.

    python3 bench/tools/gen_toolset.py && node bench/tools/check.mjs
"""
import copy
import random

from catalog_mcp import ALL
from common import prog, write

NOTE = "Tool set: 134 tools as served by github-mcp-server, the Slack, filesystem and Postgres reference servers, sentry-mcp and Linear's and Notion's MCP servers"


def catalog(fixtures):
    tools = copy.deepcopy(ALL)
    for t in tools:
        if t["name"] in fixtures:
            t["fixture"] = fixtures[t["name"]]
    assert all(any(t["name"] == n for t in tools) for n in fixtures)
    return tools


FUNCS = [("app/payments/stripe_client.py", "create_payment_intent", "StripeError", "Your card was declined."),
         ("app/cart/totals.py", "apply_discounts", "KeyError", "'promo_code'"),
         ("app/checkout/views.py", "confirm_order", "IntegrityError", "duplicate key value violates unique constraint \"orders_idempotency_key\""),
         ("app/shipping/rates.py", "quote", "TimeoutError", "Read timed out. (read timeout=5)"),
         ("app/tax/avalara.py", "calculate_tax", "HTTPError", "503 Server Error: Service Unavailable"),
         ("app/inventory/reserve.py", "reserve_items", "LockNotAvailable", "could not obtain lock on row in relation \"stock\""),
         ("app/checkout/serializers.py", "validate_address", "ValidationError", "postal_code: Enter a valid postal code."),
         ("app/payments/webhooks.py", "handle_event", "SignatureVerificationError", "No signatures found matching the expected signature for payload"),
         ("app/cart/models.py", "merge_guest_cart", "AttributeError", "'NoneType' object has no attribute 'items'")]


def sentry_github():
    rng = random.Random(11)
    issues = []
    for k in range(18):
        path, fn, etype, value = FUNCS[k % len(FUNCS)]
        short = f"CHECKOUT-API-{0x2A0 + k * 11:X}"
        status = "unresolved" if k % 5 else "resolved"
        count = rng.randint(40, 2400)
        issues.append({
            "id": str(5123400000 + k * 7919), "shortId": short, "title": f"{etype}: {value}", "culprit": f"{path} in {fn}",
            "level": "error", "status": status, "count": str(count), "userCount": rng.randint(5, 900),
            "firstSeen": f"2026-0{rng.randint(1, 3)}-0{rng.randint(1, 8)}T{rng.randint(10, 23)}:{rng.randint(10, 59)}:00Z",
            "lastSeen": f"2026-03-09T0{rng.randint(0, 9)}:{rng.randint(10, 59)}:00Z",
            "permalink": f"https://northwind.sentry.io/issues/{5123400000 + k * 7919}/", "platform": "python",
            "project": {"slug": "checkout-api", "name": "checkout-api"},
            "metadata": {"type": etype, "value": value, "filename": path, "function": fn},
            "assignedTo": None,
        })
    issues[7]["count"] = "5821"  # the loudest unresolved one
    top = issues[7]
    assert top["status"] == "unresolved" and max(int(x["count"]) for x in issues if x["status"] == "unresolved") == 5821
    sentry_args = {"organizationSlug": "northwind", "projectSlugOrId": "checkout-api", "naturalLanguageQuery": "unresolved issues seen in the last 24 hours", "limit": 25}
    gh_item = {"id": 2871004417, "number": 1843, "title": f"Webhook signature failures after key rotation ({top['shortId']})",
               "state": "open", "html_url": "https://github.com/northwind/checkout/issues/1843",
               "user": {"login": "marcus-oyelaran"}, "assignees": [{"login": "aiko-tanaka"}, {"login": "ravi-menon"}],
               "labels": [{"name": "bug"}, {"name": "payments"}, {"name": "sentry"}], "comments": 6,
               "created_at": "2026-03-08T16:20:11Z", "updated_at": "2026-03-09T08:02:45Z",
               "body": f"Sentry: {top['permalink']} ({top['shortId']})\n\nSince the Stripe webhook signing secret was rotated on 2026-03-08 about 40% of webhook deliveries fail verification. The old secret is still configured on the canary pods. Plan: roll the secret to all pods, then replay failed events from the Stripe dashboard."}
    gh_query = {"query": f"{top['shortId']} repo:northwind/checkout is:open"}
    tools = catalog({
        "sentry_search_issues": {"responses": [{"args": sentry_args, "result": {"issues": issues}}]},
        "github_search_issues": {"responses": [{"args": gh_query, "result": {"total_count": 1, "incomplete_results": False, "items": [gh_item]}}]},
    })
    expected = {"sentry": {"id": top["shortId"], "title": top["title"], "events": 5821, "users": top["userCount"], "last_seen": top["lastSeen"]},
                "github": {"number": 1843, "title": gh_item["title"], "url": gh_item["html_url"], "assignees": ["aiko-tanaka", "ravi-menon"]}}
    body = """
        const { issues } = await tools.sentry_search_issues(%s);
        const top = issues.filter((i) => i.status === "unresolved").sort((a, b) => Number(b.count) - Number(a.count))[0];
        const found = await tools.github_search_issues({ query: `${top.shortId} repo:northwind/checkout is:open` });
        const gh = found.items[0];
        return {
          sentry: { id: top.shortId, title: top.title, events: Number(top.count), users: top.userCount, last_seen: top.lastSeen },
          github: gh && { number: gh.number, title: gh.title, url: gh.html_url, assignees: gh.assignees.map((a) => a.login) },
        };
    """ % ('{ organizationSlug: "northwind", projectSlugOrId: "checkout-api", naturalLanguageQuery: "unresolved issues seen in the last 24 hours", limit: 25 }')
    discovery = """
        const find = async (query, path) => {
          const { tools: hits } = await tools.catalog.search({ query });
          if (!hits.some((h) => h.path === path)) throw new Error(`${path} not found for "${query}": ${hits.map((h) => h.path)}`);
          return (await tools.catalog.describe({ path })).typescript;
        };
        await Promise.all([find("sentry search issues", "sentry_search_issues"), find("github search issues", "github_search_issues")]);
    """
    return {
        "name": "sentry-issue-to-github",
        "description": f"{NOTE}; chains Sentry to GitHub: pick the loudest unresolved Sentry issue and find the GitHub issue tracking it. Direct mode pays for 134 tool schemas on every turn.",
        "task": "In Sentry (org northwind, project checkout-api), which unresolved issue seen in the last 24 hours has the most events? Is there an open GitHub issue in northwind/checkout that mentions its short id, and who is assigned to it?",
        "tools": tools,
        "program": prog(body),
        "program_discovery": prog(discovery) + prog(body),
        "expected": expected,
        "answer_contains": [top["shortId"], "5821", "#1843", "aiko-tanaka"],
        "answer": f"The loudest unresolved issue is {top['shortId']} ({top['title']}): 5821 events from {top['userCount']} users, last seen {top['lastSeen']}. It is tracked in northwind/checkout #1843 ({gh_item['html_url']}), assigned to aiko-tanaka and ravi-menon.",
    }


PKGS = [("npm", "lodash", "4.17.20", "4.17.21", "Command Injection in lodash"), ("npm", "axios", "1.6.0", "1.6.8", "Server-Side Request Forgery in axios"),
        ("pip", "django", "4.2.9", "4.2.11", "Django denial-of-service in intcomma template filter"), ("pip", "cryptography", "41.0.7", "42.0.4", "NULL pointer dereference with pkcs12.serialize_key_and_certificates"),
        ("npm", "express", "4.18.2", "4.19.2", "Express.js Open Redirect in malformed URLs"), ("pip", "jinja2", "3.1.2", "3.1.4", "Jinja vulnerable to HTML attribute injection"),
        ("npm", "ws", "8.16.0", "8.17.1", "ws affected by a DoS when handling a request with many HTTP headers"), ("pip", "requests", "2.31.0", "2.32.0", "Requests Session object does not verify requests after making first request with verify=False"),
        ("npm", "braces", "3.0.2", "3.0.3", "Uncontrolled resource consumption in braces"), ("pip", "pillow", "10.2.0", "10.3.0", "Pillow buffer overflow vulnerability"),
        ("npm", "follow-redirects", "1.15.4", "1.15.6", "follow-redirects' Proxy-Authorization header kept across hosts"), ("pip", "urllib3", "2.0.7", "2.2.2", "urllib3's Proxy-Authorization request header isn't stripped during cross-origin redirects"),
        ("npm", "semver", "7.5.1", "7.5.2", "semver vulnerable to Regular Expression Denial of Service"), ("npm", "tar", "6.1.15", "6.2.1", "Denial of service while parsing a tar file due to lack of folders count validation"),
        ("pip", "aiohttp", "3.9.1", "3.9.4", "aiohttp is vulnerable to directory traversal"), ("npm", "undici", "5.28.2", "5.28.4", "Undici's fetch with integrity option is too lax when algorithm is specified but hash value is incorrect")]


def dependabot_slack():
    rng = random.Random(12)
    sevs = ["critical", "high", "high", "medium", "medium", "medium", "low"]
    alerts = []
    for k in range(34):
        eco, name, vuln, fixed, summary = PKGS[k % len(PKGS)]
        sev = sevs[(k * 3 + k // 5) % len(sevs)]
        manifest = "package-lock.json" if eco == "npm" else "requirements.txt"
        ghsa = f"GHSA-{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}"
        alerts.append({
            "number": 212 - k * 3, "state": "open",
            "dependency": {"package": {"ecosystem": eco, "name": name}, "manifest_path": (f"services/{['web', 'api', 'worker'][k % 3]}/" + manifest), "scope": rng.choice(["runtime", "runtime", "development"])},
            "security_advisory": {"ghsa_id": ghsa, "cve_id": f"CVE-202{rng.randint(3, 5)}-{rng.randint(20000, 49999)}", "summary": summary,
                                  "description": f"{summary}. Versions of {name} prior to {fixed} are affected. An attacker able to control input reaching the affected code path can trigger the issue remotely without authentication. Upgrade to {fixed} or later; no workaround is available for older versions. The maintainers thank the reporters for coordinated disclosure.",
                                  "severity": sev, "cvss": {"score": {"critical": 9.8, "high": 7.5, "medium": 5.3, "low": 3.1}[sev], "vector_string": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"},
                                  "published_at": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T00:00:00Z"},
            "security_vulnerability": {"package": {"ecosystem": eco, "name": name}, "severity": sev, "vulnerable_version_range": f"< {fixed}", "first_patched_version": {"identifier": fixed}},
            "url": f"https://api.github.com/repos/northwind/checkout/dependabot/alerts/{212 - k * 3}",
            "html_url": f"https://github.com/northwind/checkout/security/dependabot/{212 - k * 3}",
            "created_at": f"2026-0{rng.randint(1, 3)}-{rng.randint(1, 8):02d}T{rng.randint(10, 23)}:00:00Z",
        })
    counts = {s: sum(1 for a in alerts if a["security_advisory"]["severity"] == s) for s in ["critical", "high", "medium", "low"]}
    critical = sorted({(a["dependency"]["package"]["name"], a["security_vulnerability"]["first_patched_version"]["identifier"]) for a in alerts if a["security_advisory"]["severity"] == "critical"})
    channels = [{"id": f"C0{rng.getrandbits(32):08X}", "name": n, "is_archived": n.startswith("old-"), "num_members": rng.randint(4, 400),
                 "topic": {"value": t}, "purpose": {"value": t}, "created": 1650000000 + k * 86400 * 17}
                for k, (n, t) in enumerate([("general", "Company-wide announcements"), ("random", "Non-work banter"), ("eng", "Engineering discussion"),
                                            ("incidents", "Active incident coordination"), ("deploys", "Deploy notifications from CI"), ("team-payments", "Payments team"),
                                            ("team-identity", "Identity team"), ("sec-alerts", "Security alerts: Dependabot, code scanning, secret scanning"),
                                            ("security", "Security team discussion"), ("oncall", "On-call handoffs"), ("old-sec-alerts", "Archived, use #sec-alerts"),
                                            ("design", "Product design"), ("support-escalations", "Support escalations to engineering"), ("data", "Data and analytics"),
                                            ("frontend", "Web frontend"), ("mobile", "iOS and Android"), ("infra", "Infrastructure and platform"), ("releases", "Release coordination"),
                                            ("hiring", "Hiring pipeline"), ("watercooler", "Chit-chat")])]
    sec = next(c for c in channels if c["name"] == "sec-alerts")
    posted = {"ok": True, "channel": sec["id"], "ts": "1773057600.004100",
              "message": {"type": "message", "user": "U07HOOKBOT", "ts": "1773057600.004100", "bot_id": "B07SECBOT"}}
    tools = catalog({
        "github_list_dependabot_alerts": {"responses": [{"args": {"owner": "northwind", "repo": "checkout", "state": "open"}, "result": alerts}]},
        "slack_list_channels": {"responses": [{"args": {"limit": 200}, "result": {"ok": True, "channels": channels, "response_metadata": {"next_cursor": ""}}}]},
        "slack_post_message": {"default": posted},
    })
    body = """
        const [alerts, { channels }] = await Promise.all([
          tools.github_list_dependabot_alerts({ owner: "northwind", repo: "checkout", state: "open" }),
          tools.slack_list_channels({ limit: 200 }),
        ]);
        const counts = { critical: 0, high: 0, medium: 0, low: 0 };
        for (const a of alerts) counts[a.security_advisory.severity] += 1;
        const critical = [...new Set(alerts
          .filter((a) => a.security_advisory.severity === "critical")
          .map((a) => `${a.dependency.package.name} -> ${a.security_vulnerability.first_patched_version.identifier}`))].sort();
        const channel = channels.find((c) => c.name === "sec-alerts" && !c.is_archived);
        const text = [
          `*Dependabot: ${alerts.length} open alerts on northwind/checkout*`,
          `critical ${counts.critical} | high ${counts.high} | medium ${counts.medium} | low ${counts.low}`,
          `Critical, upgrade to: ${critical.join(", ")}`,
        ].join("\\n");
        const post = await tools.slack_post_message({ channel_id: channel.id, text });
        return { counts, critical, posted: { channel: post.channel, ts: post.ts } };
    """
    discovery = """
        const find = async (query, path) => {
          const { tools: hits } = await tools.catalog.search({ query });
          if (!hits.some((h) => h.path === path)) throw new Error(`${path} not found for "${query}": ${hits.map((h) => h.path)}`);
          return (await tools.catalog.describe({ path })).typescript;
        };
        await Promise.all([
          find("dependabot alerts", "github_list_dependabot_alerts"),
          find("slack list channels", "slack_list_channels"),
          find("slack post message", "slack_post_message"),
        ]);
    """
    expected = {"counts": counts, "critical": [f"{n} -> {v}" for n, v in critical], "posted": {"channel": sec["id"], "ts": "1773057600.004100"}}
    return {
        "name": "dependabot-slack-summary",
        "description": f"{NOTE}; GitHub Dependabot alerts (34 alerts, ~45 KB) summarised by severity and posted to a Slack channel found by name.",
        "task": "Summarise the open Dependabot alerts of northwind/checkout by severity (critical/high/medium/low counts, plus each critical package with the version that fixes it) and post the summary to the #sec-alerts Slack channel. Tell me the counts and the posted message's timestamp.",
        "tools": tools,
        "program": prog(body),
        "program_discovery": prog(discovery) + prog(body),
        "expected": expected,
        "answer": (f"Posted to #sec-alerts (ts 1773057600.004100). Open Dependabot alerts on northwind/checkout: {len(alerts)} in all, "
                   f"{counts['critical']} critical, {counts['high']} high, {counts['medium']} medium, {counts['low']} low. "
                   f"Critical packages and fixed versions: {', '.join(f'{n} {v}' for n, v in critical)}."),
        "answer_contains": [f"{counts['critical']} critical", f"{counts['high']} high", f"{critical[0][0]} {critical[0][1]}", "1773057600.004100"],
    }


if __name__ == "__main__":
    print(write(11, sentry_github()))
    print(write(12, dependabot_slack()))
