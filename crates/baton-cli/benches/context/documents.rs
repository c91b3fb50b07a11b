//! The planning documents of the benchmark's project, generated deterministically in the shape
//! of BMad's pinned templates (`bmad-method` 6.12: `bmad-prd/assets/prd-template.md`,
//! `bmad-create-epics-and-stories/templates/epics-template.md`, the architecture spine
//! `bmad-architecture/assets/spine-template.md` with the decision sections v6 architecture
//! documents carry, and `bmad-create-story/template.md`), at the median sizes measured on real
//! projects: PRD ≈ 17 KB, epics ≈ 22 KB, architecture ≈ 61 KB, story ≈ 13 KB.
//!
//! The prose is made from sentence patterns over one product's vocabulary (Larder, a household
//! pantry and grocery-budget web app), so it tokenizes like English technical prose rather than
//! like random words. Sizes are reached by adding paragraphs to sections, never by padding.

use std::fmt::Write as _;

/// A small deterministic generator (64-bit LCG): the same documents on every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }

    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() as usize) % items.len()]
    }
}

const ACTORS: &[&str] = &[
    "the household owner",
    "a household member",
    "the shopper",
    "the budget holder",
    "an invited guest",
    "the API client",
    "the background worker",
    "the notification service",
];
const NOUNS: &[&str] = &[
    "pantry item",
    "shopping list",
    "receipt",
    "weekly budget",
    "household",
    "expiry reminder",
    "barcode scan",
    "store location",
    "price history",
    "meal plan",
    "inventory snapshot",
    "sync token",
];
const VERBS: &[&str] = &[
    "records",
    "validates",
    "reconciles",
    "archives",
    "publishes",
    "recomputes",
    "rejects",
    "merges",
    "paginates",
    "deduplicates",
];
const QUALITIES: &[&str] = &[
    "within 300 ms at the 95th percentile",
    "without losing an edit made offline",
    "in the member's own locale and currency",
    "idempotently, keyed by the client's request id",
    "inside one database transaction",
    "with an audit entry naming the member",
    "before the response is sent",
    "for at most 90 days, then purges it",
];
const REASONS: &[&str] = &[
    "so that two devices editing the same list converge",
    "because receipts arrive minutes after the purchase",
    "so that the weekly cap never counts a trip twice",
    "because members share one household but not one device",
    "so that a failed OCR pass can be retried safely",
    "because prices differ by store and by week",
    "so that support can explain every change to a member",
];

/// One sentence of technical prose.
fn sentence(r: &mut Rng) -> String {
    match r.next() % 5 {
        0 => format!(
            "When {} opens a {}, the service {} it {}.",
            r.pick(ACTORS),
            r.pick(NOUNS),
            r.pick(VERBS),
            r.pick(QUALITIES)
        ),
        1 => format!(
            "The {} module {} every {} {}, {}.",
            r.pick(NOUNS),
            r.pick(VERBS),
            r.pick(NOUNS),
            r.pick(QUALITIES),
            r.pick(REASONS)
        ),
        2 => format!(
            "A {} that {} cannot change is shown read-only, {}.",
            r.pick(NOUNS),
            r.pick(ACTORS),
            r.pick(REASONS)
        ),
        3 => format!(
            "Each {} carries its household id and a version; the API {} stale writes {}.",
            r.pick(NOUNS),
            r.pick(VERBS),
            r.pick(QUALITIES)
        ),
        _ => format!(
            "If the {} is missing, {} sees the empty state and one action to create it, {}.",
            r.pick(NOUNS),
            r.pick(ACTORS),
            r.pick(REASONS)
        ),
    }
}

/// A paragraph of `n` sentences.
fn paragraph(r: &mut Rng, n: usize) -> String {
    (0..n).map(|_| sentence(r)).collect::<Vec<_>>().join(" ")
}

/// The epics, their stories' titles (five epics of four stories).
pub const EPICS: [(&str, [&str; 4]); 5] = [
    (
        "Households and Accounts",
        [
            "Sign Up and Create a Household",
            "Invite Members",
            "Roles and Permissions",
            "Leave or Delete a Household",
        ],
    ),
    (
        "Pantry Inventory",
        [
            "Add Items by Hand",
            "Scan Barcodes",
            "Pantry History",
            "Expiry Reminders",
        ],
    ),
    (
        "Shopping Lists",
        [
            "Shared Lists",
            "Offline Edits",
            "Store Aisles",
            "Suggested Items",
        ],
    ),
    (
        "Receipts and Budgets",
        [
            "Scan a Receipt",
            "Weekly Cap",
            "Trip Damage Overlay",
            "Price History",
        ],
    ),
    (
        "Notifications",
        [
            "Push Preferences",
            "Digest Email",
            "Quiet Hours",
            "Delivery Audit",
        ],
    ),
];

/// The story the benchmark works: epic 2, story 3 (`2-3-pantry-history`).
pub const STORY: (usize, usize) = (2, 3);

/// `2-3-pantry-history`.
pub fn story_key() -> String {
    let (e, s) = STORY;
    let title = EPICS[e - 1].1[s - 1];
    format!("{e}-{s}-{}", title.to_lowercase().replace(' ', "-"))
}

/// The heading of a story in the epics document (`Story 2.3: Pantry History`).
pub fn story_heading(e: usize, s: usize) -> String {
    format!("Story {e}.{s}: {}", EPICS[e - 1].1[s - 1])
}

/// The heading of an epic in the epics document (`Epic 2: Pantry Inventory`).
pub fn epic_heading(e: usize) -> String {
    format!("Epic {e}: {}", EPICS[e - 1].0)
}

/// Adds paragraphs to `doc` under the current heading until it reaches `bytes`.
fn grow(doc: &mut String, r: &mut Rng, bytes: usize) {
    while doc.len() < bytes {
        let _ = write!(doc, "{}\n\n", paragraph(r, 4));
    }
}

/// The PRD (≈ 17 KB), in the PRD template's spine.
pub fn prd() -> String {
    let mut r = Rng::new(17);
    let mut d = String::from(
        "---\ntitle: Larder\ncreated: 2026-03-02\nupdated: 2026-03-19\n---\n\n# PRD: Larder\n\n",
    );
    let _ = write!(
        d,
        "## 0. Document Purpose\n\n{}\n\n## 1. Vision\n\n{}\n\n{}\n\n## 2. Target User\n\n### 2.1 Jobs To Be Done\n\n",
        paragraph(&mut r, 4),
        paragraph(&mut r, 5),
        paragraph(&mut r, 4)
    );
    for _ in 0..6 {
        let _ = writeln!(d, "- {}", sentence(&mut r));
    }
    d.push_str("\n### 2.3 Key User Journeys\n\n");
    for j in 1..=5 {
        let _ = write!(
            d,
            "- **UJ-{j}. {} keeps the {} current.**\n  > {}\n\n",
            r.pick(ACTORS),
            r.pick(NOUNS),
            paragraph(&mut r, 3)
        );
    }
    d.push_str("## 3. Glossary\n\n");
    for n in NOUNS {
        let _ = writeln!(d, "- **{n}** — {}", sentence(&mut r));
    }
    d.push_str("\n## 4. Features\n\n");
    let mut fr = 0;
    for (i, (epic, stories)) in EPICS.iter().enumerate() {
        let _ = write!(
            d,
            "### 4.{} {epic}\n\n**Description:** {}\n\n**Functional Requirements:**\n\n",
            i + 1,
            paragraph(&mut r, 3)
        );
        for title in stories {
            fr += 1;
            let _ = write!(
                d,
                "#### FR-{fr}: {title}\n\n{} Realizes UJ-{}.\n\n**Consequences (testable):**\n- {}\n\n",
                sentence(&mut r),
                1 + fr % 5,
                sentence(&mut r)
            );
        }
    }
    let _ = write!(
        d,
        "## 5. Non-Goals (Explicit)\n\n- {}\n- {}\n\n## 6. MVP Scope\n\n### 6.1 In Scope\n\n- {}\n\n### 6.2 Out of Scope for MVP\n\n- {}\n\n## 7. Success Metrics\n\n**Primary**\n- **SM-1**: {}\n\n## 8. Open Questions\n\n1. {}\n\n## 9. Assumptions Index\n\n",
        sentence(&mut r),
        sentence(&mut r),
        sentence(&mut r),
        sentence(&mut r),
        sentence(&mut r),
        sentence(&mut r)
    );
    grow(&mut d, &mut r, 17 * 1024);
    d
}

/// The epics document (≈ 22 KB), in the epics template.
pub fn epics() -> String {
    let mut r = Rng::new(22);
    let mut d = String::from(
        "---\nstepsCompleted: [1, 2, 3, 4]\ninputDocuments: [prd.md, architecture.md]\n---\n\n# Larder - Epic Breakdown\n\n## Overview\n\n",
    );
    let _ = write!(
        d,
        "{}\n\n## Requirements Inventory\n\n### Functional Requirements\n\n",
        paragraph(&mut r, 2)
    );
    for fr in 1..=20 {
        let _ = writeln!(d, "FR-{fr}: {}", sentence(&mut r));
    }
    d.push_str("\n### NonFunctional Requirements\n\n");
    for nfr in 1..=6 {
        let _ = writeln!(d, "NFR-{nfr}: {}", sentence(&mut r));
    }
    let _ = write!(
        d,
        "\n### Additional Requirements\n\n- {}\n\n### FR Coverage Map\n\n",
        sentence(&mut r)
    );
    for fr in 1..=20 {
        let _ = writeln!(
            d,
            "FR-{fr}: Epic {} - Story {}.{}",
            1 + (fr - 1) / 4,
            1 + (fr - 1) / 4,
            1 + (fr - 1) % 4
        );
    }
    d.push_str("\n## Epic List\n\n");
    for (i, (epic, _)) in EPICS.iter().enumerate() {
        let _ = writeln!(d, "{}. {epic}: {}", i + 1, sentence(&mut r));
    }
    for (i, (_, stories)) in EPICS.iter().enumerate() {
        let e = i + 1;
        let _ = write!(d, "\n## {}\n\n{}\n", epic_heading(e), paragraph(&mut r, 2));
        for s in 1..=stories.len() {
            let _ = write!(
                d,
                "\n### {}\n\nAs {},\nI want the {} to be kept up to date,\nSo that {}.\n\n**Acceptance Criteria:**\n\n",
                story_heading(e, s),
                r.pick(ACTORS),
                r.pick(NOUNS),
                r.pick(REASONS)
                    .trim_start_matches("so that ")
                    .trim_start_matches("because ")
            );
            for _ in 0..2 {
                let _ = write!(
                    d,
                    "**Given** {} has a {}\n**When** {} {} it\n**Then** {}\n\n",
                    r.pick(ACTORS),
                    r.pick(NOUNS),
                    r.pick(ACTORS),
                    r.pick(VERBS),
                    sentence(&mut r)
                );
            }
        }
    }
    grow(&mut d, &mut r, 22 * 1024);
    d
}

/// The architecture sections a story of epic 2 draws on (the developer's Dev Notes cite them).
pub const ARCH_SECTIONS: [&str; 2] = [
    "Data Architecture",
    "Implementation Patterns & Consistency Rules",
];

/// The PRD section of the story's feature.
pub const PRD_SECTION: &str = "4.2 Pantry Inventory";

/// The architecture document (≈ 61 KB): the spine's sections and the decision sections of a v6
/// architecture document, each of several kilobytes.
pub fn architecture() -> String {
    let mut r = Rng::new(61);
    let mut d = String::from(
        "---\nname: 'Larder'\ntype: architecture-spine\npurpose: build-substrate\naltitude: feature\nparadigm: 'hexagonal'\nstatus: final\ncreated: '2026-03-20'\n---\n\n# Architecture Spine — Larder\n\n",
    );
    let sections: [(&str, usize); 12] = [
        ("Project Context Analysis", 4),
        ("Design Paradigm", 3),
        ("Core Architectural Decisions", 6),
        ("Data Architecture", 6),
        ("Authentication & Security", 5),
        ("API & Communication Patterns", 6),
        ("Frontend Architecture", 5),
        ("Infrastructure & Deployment", 5),
        ("Implementation Patterns & Consistency Rules", 6),
        ("Project Structure & Boundaries", 5),
        ("Stack", 2),
        ("Architecture Validation Results", 4),
    ];
    // Sections end with a whole paragraph, so they run a little past their share.
    let per_section = 59 * 1024 / sections.len();
    let mut ad = 0;
    for (title, subsections) in sections {
        let start = d.len();
        let _ = write!(d, "## {title}\n\n{}\n\n", paragraph(&mut r, 3));
        for k in 1..=subsections {
            ad += 1;
            let _ = write!(
                d,
                "### AD-{ad} — {} {}\n\n- **Binds:** FR-{}, NFR-{}\n- **Prevents:** {}\n- **Rule:** {}\n\n{}\n\n",
                r.pick(NOUNS),
                r.pick(VERBS),
                1 + ad % 20,
                1 + ad % 6,
                sentence(&mut r),
                sentence(&mut r),
                paragraph(&mut r, 3)
            );
            if k == 2 {
                let _ = write!(
                    d,
                    "| Concern | Convention |\n| --- | --- |\n| Naming | {} |\n| Data & formats | {} |\n| Errors | {} |\n\n",
                    r.pick(NOUNS),
                    r.pick(QUALITIES),
                    r.pick(REASONS)
                );
            }
        }
        while d.len() - start < per_section {
            let _ = write!(d, "{}\n\n", paragraph(&mut r, 4));
        }
    }
    d
}

/// The story file the scrum master writes (≈ 13 KB), in the story template, citing the
/// architecture sections and the PRD feature it needs.
pub fn story() -> String {
    let mut r = Rng::new(13);
    let (e, s) = STORY;
    let mut d = format!(
        "# Story {e}.{s}: {}\n\nStatus: ready-for-dev\n\n## Story\n\nAs a household member,\nI want to see how each pantry item's quantity changed over time,\nso that I can tell what we use and what we waste.\n\n## Acceptance Criteria\n\n",
        EPICS[e - 1].1[s - 1]
    );
    for ac in 1..=6 {
        let _ = writeln!(
            d,
            "{ac}. Given {} has a {}, when {} {} it, then {}",
            r.pick(ACTORS),
            r.pick(NOUNS),
            r.pick(ACTORS),
            r.pick(VERBS),
            sentence(&mut r)
        );
    }
    d.push_str("\n## Tasks / Subtasks\n\n");
    for t in 1..=8 {
        let _ = writeln!(
            d,
            "- [ ] Task {t}: {} (AC: {})\n  - [ ] Subtask {t}.1: {}\n  - [ ] Subtask {t}.2: {}",
            sentence(&mut r),
            1 + t % 6,
            sentence(&mut r),
            sentence(&mut r)
        );
    }
    let _ = write!(
        d,
        "\n## Dev Notes\n\n- Relevant architecture patterns and constraints: {}\n- Source tree components to touch: `src/pantry/history.rs`, `src/pantry/mod.rs`, `tests/pantry_history.rs`.\n- Testing standards summary: {}\n\n",
        sentence(&mut r),
        sentence(&mut r)
    );
    for _ in 0..3 {
        let _ = write!(d, "{}\n\n", paragraph(&mut r, 4));
    }
    let _ = write!(
        d,
        "### Project Structure Notes\n\n- {}\n- {}\n\n### References\n\n",
        sentence(&mut r),
        sentence(&mut r)
    );
    for section in ARCH_SECTIONS {
        let _ = writeln!(
            d,
            "- [Source: _bmad-output/planning-artifacts/architecture.md#{section}]"
        );
    }
    let _ = writeln!(
        d,
        "- [Source: _bmad-output/planning-artifacts/prd.md#{PRD_SECTION}]\n- [Source: _bmad-output/planning-artifacts/epics.md#{}]",
        story_heading(e, s)
    );
    d.push_str("\n### Previous Story Intelligence\n\n");
    while d.len() < 12 * 1024 {
        let _ = write!(d, "{}\n\n", paragraph(&mut r, 4));
    }
    d.push_str(
        "## Dev Agent Record\n\n### Agent Model Used\n\nclaude-sonnet-4-5\n\n### Debug Log References\n\n### Completion Notes List\n\n### File List\n\n## Change Log\n\n",
    );
    d
}

/// The lines (1-based first line, line count) of the section under `heading` in `doc`: from its
/// heading to the next heading of the same or a higher level.
pub fn section_lines(doc: &str, heading: &str) -> (usize, usize) {
    let lines: Vec<&str> = doc.lines().collect();
    let level = |l: &str| l.chars().take_while(|c| *c == '#').count();
    let start = lines
        .iter()
        .position(|l| level(l) > 0 && l.trim_start_matches('#').trim() == heading)
        .unwrap_or_else(|| panic!("no heading `{heading}`"));
    let depth = level(lines[start]);
    let end = lines[start + 1..]
        .iter()
        .position(|l| (1..=depth).contains(&level(l)))
        .map_or(lines.len(), |p| start + 1 + p);
    (start + 1, end - start)
}
