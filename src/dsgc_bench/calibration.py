"""Calibration history of both scenario families' templates (rendered into the report).

``HISTORIES[family]`` is ``(intro, variants)``: what the family's templates had to meet and
each variant we ran, what we measured and why it was rejected or accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

NEUTRAL_INTRO = (
    "The issue fixes the targets the templates must meet (controls >= 0.95 for every policy and "
    "encoder; targets: similarity-only <= 0.35 and DSGC >= 0.85 under the lexical encoder, DSGC "
    ">= 0.95 under the sentence encoder).  When a draft missed them we changed the *templates* "
    "(sentences, lengths, the filler corpus), never the metric, the budget rule or the policies. "
    "Each entry is a variant we ran, what we measured and why it was rejected or accepted. "
    "Figures are full-chain retention at M = 2.0, medium honeypots, 20 blocks, seeds 0..n-1."
)


@dataclass(frozen=True)
class Variant:
    name: str
    change: str
    measured: str
    verdict: str


HISTORY: tuple[Variant, ...] = (
    Variant(
        name="v0: first draft",
        change=(
            "Expense chain 'Project P has B dollars of budget left.' / 'Project P allows any "
            "expense up to T dollars.'; role c2 'Bundle B maps to clearance T.' (6 words); "
            "honeypots of 9-13 words; profile c1 'S holds route ticket R.' (5 words); fillers "
            "were office/social notes only."
        ),
        measured=(
            "lexical, 15 seeds: expense sim 0.00 / DSGC 0.00; threshold 1.00 / 1.00; "
            "role sim 0.73 / DSGC 0.80; profile sim 0.07 / DSGC 1.00."
        ),
        verdict=(
            "Rejected. Expense: the chain blocks shared only 'project' and the name with the "
            "query (cosine 0.24-0.33) while honeypots sharing 'expense'/'allowed' and fillers "
            "with hash collisions reached 0.35-0.44, so the control failed for every policy. "
            "Role: the 6-word c2 slipped into the leftover budget under first-fit selection "
            "(similarity kept the chain by size, not by rank), and two 11-word honeypots ranked "
            "above c1 left no room for it (DSGC failures were budget arithmetic, not ranking). "
            "Profile: the 5-word c1 always fit, hiding the two-hop weakness."
        ),
    ),
    Variant(
        name="v1: aligned control chains, balanced lengths",
        change=(
            "Expense chain blocks now share 7 query tokens ('Each expense for project P is "
            "drawn from a B dollar budget.', 'An expense for project P is allowed up to T "
            "dollar.'); medium honeypots share 2-5 decisive tokens with other projects; role c2 "
            "lengthened to 9 words with no query word; target honeypots shortened to 7-9 words; "
            "profile c1 diluted to 9 words ('S holds route ticket R since its spring "
            "migration.'), profile c2 10 words."
        ),
        measured=(
            "lexical, 15 seeds: controls 1.00 everywhere; role sim 0.00 / DSGC 1.00; profile "
            "sim 0.00 / DSGC 0.93 (0.88 over 100 seeds). Sentence, 15 seeds: controls 1.00; "
            "role sim 0.07 / DSGC 1.00; profile sim 0.93 / DSGC 1.00."
        ),
        verdict=(
            "Rejected. Lexical targets met, but under the sentence encoder every filler (office "
            "and social notes) was semantically far from the technical c2 block, so "
            "similarity-only kept the profile chain 14 times in 15: the trigger disappeared "
            "for the dense encoder, which the paper reports as still failing (0.23)."
        ),
    ),
    Variant(
        name="v2: operations notes among the fillers",
        change=(
            "Half of the filler subjects and events became engineering-operations notes "
            "('The database squad patched the staging cluster at noon.'), still without any "
            "query's decisive vocabulary."
        ),
        measured="sentence, 30 seeds: role sim 0.00; profile sim 0.70. Lexical unchanged (profile DSGC 0.89 / 100 seeds).",
        verdict="Rejected: profile similarity-only under the sentence encoder still mostly succeeded.",
    ),
    Variant(
        name="v3: monitoring-flavoured operations notes",
        change=(
            "Five social filler events replaced by monitoring notes ('drained a message "
            "queue', 'muted a noisy pager alert', 'reindexed the metrics store', 'rolled out a "
            "logging agent', 'rerouted the status webhooks')."
        ),
        measured=(
            "20 blocks: lexical, 100 seeds: controls 1.00; role sim 0.00 / DSGC 1.00; profile "
            "sim 0.00 / DSGC 0.90. Sentence, 30 seeds: profile sim 0.53 / DSGC 1.00. Scaling "
            "(lexical DSGC, 15 seeds): profile 0.93 at 20, 50 and 10,000 blocks."
        ),
        verdict=(
            "Rejected. The main suite met every target, but the filler corpus was a product of "
            "only 69 phrase parts, so filler similarities took few distinct values: more fillers "
            "added copies of the same competitors, never stronger ones, and the lexical rule did "
            "not degrade even at 10,000 blocks. That is an artifact of a low-diversity corpus "
            "(real notes carry many distinct tokens), not a property of the rule."
        ),
    ),
    Variant(
        name="v4: a distinct note number per filler",
        change="Each filler ends with its own five-digit note number, e.g. '(#48213)', as ticket or log references do.",
        measured=(
            "lexical, 100 seeds: controls 1.00; role DSGC 1.00; profile DSGC 0.96. "
            "Scaling (lexical, profile DSGC): 0.93 at 50 and 200 blocks, 0.80 at 1,000, 0.33 at 10,000."
        ),
        verdict=(
            "Rejected. Scaling now behaves (an extra random token per filler gives the extreme "
            "filler similarity room to grow with N), but the extra token also diluted the "
            "fillers' overlap with the profile query, which moved profile away from the paper's "
            "residual-failure regime (0.96 over 100 seeds against the paper's 0.80)."
        ),
    ),
    Variant(
        name="v5: longer profile c1 (accepted)",
        change=(
            "Profile c1 lengthened from 9 to 11 words ('S has held route ticket R since its "
            "spring platform migration.'), still sharing only the service identifier with the query."
        ),
        measured=(
            "20 blocks, lexical, 100 seeds: controls 1.00; role sim 0.00 / DSGC 1.00; profile sim "
            "0.00 / DSGC 0.90. Sentence, 30 seeds: controls 1.00; role sim 0.00 / DSGC 1.00; "
            "profile sim 0.37 / DSGC 1.00."
        ),
        verdict=(
            "Accepted: every target of the issue holds with margin over 100 seeds (not only the "
            "15 the suite reports), the profile residual failure rate matches the paper's regime, "
            "and the sentence encoder still shows the similarity-only failure on both targets."
        ),
    ),
    Variant(
        name="v6: capitalised relay-profile names (accepted, retention unchanged)",
        change=(
            "Profile pool values written as names ('relay profile Onyx' instead of 'relay profile "
            "onyx') so identifier-based edge induction can tell the profile name from vocabulary."
        ),
        measured=(
            "Both encoders lower-case their input (the lexical tokenizer; MiniLM's do_lower_case), "
            "so raw-main.json is identical to v5 up to letter case, 15 seeds, both encoders. Induced "
            "edges on profile: recall 0.50 -> 1.00 at precision 1.00; DSGC with induced edges equals "
            "DSGC with supplied edges (lexical 0.93, sentence 1.00; before: 0.00 and 0.40)."
        ),
        verdict="Accepted: a change of surface form only, invisible to both encoders.",
    ),
)

PAPER_INTRO = (
    "The `paper` family models the paper's own generator (its mechanisms are listed in "
    "`paper_family.py`), so its target is the paper's figures themselves: each of the 53 cells of "
    "Tables 1, 2, 4, 5 and 6 and the recency figure within sampling error at 15 seeds (two-sided "
    "Fisher exact p >= 0.05), Table 3's pattern, and rates over 100 further seeds (15..114) close to "
    "the paper's. We tuned only what the mechanisms act through: block lengths (which decide what "
    "first-fit keeps by size and how many filler copies the budget absorbs), the words a block "
    "shares with its query, which honeypots are strong or short, and the 16 filler sentences; never "
    "the generator's recipe, the budget rule, the policies or the metric. Figures are lexical, M = 2, "
    '20 blocks unless stated; "100 seeds" means seeds 15..114.'
)

PAPER_HISTORY: tuple[Variant, ...] = (
    Variant(
        name="p0: first draft",
        change=(
            "Four templates with four values per slot and eight honeypots per strength; 16 office "
            "notes as fillers, several with two or three 'the'; role c2 6 words, profile c3 9 words."
        ),
        measured=(
            "15 seeds, 6 of the lexical cells at p < 0.05: controls similarity-only 21/30; role DSGC at "
            "lambda_pi 0.5 4/15; profile DSGC at M = 1 0/15; role similarity-only at M = 5 13/15."
        ),
        verdict=(
            "Rejected. Control honeypots shared as many query words as c1; the 6-word role c2 fitted "
            "into almost any leftover budget (kept by size); at M = 1 four of the eight profile "
            "honeypots outranked c3."
        ),
    ),
    Variant(
        name="p1: aligned control chains",
        change="Control chain blocks share 6-8 query words, their medium honeypots 2-4.",
        measured="Controls 30/30 for every policy, both encoders.",
        verdict="Accepted for the controls.",
    ),
    Variant(
        name="p2: role lengths",
        change=(
            "Role chain 13 + 14 + 8 words: the budget 2L left after c1, c2 and the honeypots that outrank "
            "c3 holds two copies of the one filler that outranks c3 (12 words) but not three, and a "
            "strong honeypot leaves room for one copy only if c3 is then kept by size; c2 reworded so "
            "that it shares no query word and sits among the fillers under MiniLM."
        ),
        measured="100 seeds: role DSGC 0.95 at 20 blocks, 0.67 at 50, 0.56 at M = 1; sentence similarity-only 0.14.",
        verdict="Accepted: the role boundary comes from filler copies at the cutoff, as in the paper's stores.",
    ),
    Variant(
        name="p3: profile lengths and honeypots",
        change=(
            "Profile query with 'the' twice, so generic fillers gain on the identifier-only c1; c2 13 and "
            "c3 14 words, so the budget left after c2, c3 and two honeypots holds one copy of the "
            "strongest filler and c1 (7 words) but not two copies; every medium honeypot below c3, two of "
            "them 7 words (as short as c1: at M = 1 they take c1's place)."
        ),
        measured=(
            "100 seeds: profile DSGC 0.78 at 20 blocks, 0.35 at 50, 0.53 / 0.78 / 1.00 at lambda_pi "
            "0.5 / 1 / 2, 0.50 at M = 1; failing runs rank c2, c3 first and c1 seventh."
        ),
        verdict="Accepted.",
    ),
    Variant(
        name="p4: the filler pool",
        change=(
            "One filler shares 'the' twice, 'to' and the suffix's 'or' with the target queries (the "
            "strongest filler), one shares 'the', 'to' and 'of'; the others at most one 'the' (four lost "
            "theirs, e.g. 'our cafeteria', so that the profile c2, which shares only 'to', outranks more "
            "of them). 'leave' was replaced by 'stack': it shares a hash bucket with the suffix's 'yes'. "
            "Two delivery notes replaced two social notes so that MiniLM finds fillers near the profile c2."
        ),
        measured=(
            "Profile similarity-only at M = 5: 0.36 -> 0.72 (100 seeds); sentence similarity-only: role "
            "0.12, profile 0.45. All 53 cells at p >= 0.05 at 15 seeds (0..14); over 100 seeds 52 of 53, "
            "the exception lexical profile DSGC at lambda_pi 2 (100/100 against the paper's 13/15, p = 0.016)."
        ),
        verdict=(
            "Accepted. Left as it is: our role similarity-only successes at M = 5 come by rank, not by "
            "size as in the paper's stores (a role c2 short enough to be kept by size at M = 5 was also "
            "kept at M = 2, 0.42 over 100 seeds against the paper's 0.00)."
        ),
    ),
)

#: family -> (what its templates had to meet, the variants tried)
HISTORIES: dict[str, tuple[str, tuple[Variant, ...]]] = {
    "neutral": (NEUTRAL_INTRO, HISTORY),
    "paper": (PAPER_INTRO, PAPER_HISTORY),
}
