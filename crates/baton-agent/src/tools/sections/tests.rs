//! Sections of real BMad documents: a BMad-shaped architecture document kept in the fixtures
//! (front matter, `---` rules, fences holding `#` lines, nested and repeated headings, a heading
//! closed by `#`s, a hand-written setext appendix), and the documents of the pinned
//! `bmad-method` package that `.ci/run` installs (`BATON_TEST_BMAD_DIR`).

use super::*;
use std::path::{Path, PathBuf};

const ARCHITECTURE: &str = include_str!("../../../tests/fixtures/bmad/architecture.md");

/// (level, name) of every heading.
fn names(doc: &Outline) -> Vec<(u8, &str)> {
    doc.headings
        .iter()
        .map(|h| (h.level, h.name.as_str()))
        .collect()
}

/// The section `query` names, as text.
fn section<'t>(text: &'t str, query: &str) -> &'t str {
    let doc = parse(text);
    let i = doc.find(query).unwrap_or_else(|m| panic!("{query}: {m:?}"));
    &text[doc.headings[i].bytes.clone()]
}

/// `text` from the line `from` (included) to the line `to` (excluded; `None`: the end), both
/// given as their exact text.
fn between<'t>(text: &'t str, from: &str, to: Option<&str>) -> &'t str {
    let at = |line: &str| {
        let mut start = 0;
        for l in text.split_inclusive('\n') {
            if l.trim_end_matches(['\n', '\r']) == line {
                return start;
            }
            start += l.len();
        }
        panic!("no line {line:?}")
    };
    &text[at(from)..to.map_or(text.len(), at)]
}

#[test]
fn the_architecture_documents_headings_and_nothing_else() {
    let doc = parse(ARCHITECTURE);
    assert_eq!(
        names(&doc),
        [
            (1, "Architecture Decision Document"),
            (2, "Project Context Analysis"),
            (3, "Requirements Overview"),
            (3, "Technical Constraints & Dependencies"),
            (3, "Cross-Cutting Concerns Identified"),
            (2, "Starter Template Evaluation"),
            (3, "Primary Technology Domain"),
            (3, "Selected Starter: none (cargo new)"),
            (2, "Core Architectural Decisions"),
            (3, "Decision Priority Analysis"),
            (3, "ADR-001: SQLite through sqlx"),
            (4, "Consequences"),
            (3, "ADR-002: Sessions in a signed cookie"),
            (4, "Consequences (2)"),
            (3, "ADR-003: Money as integer minor units"),
            (4, "Consequences (3)"),
            (2, "Data Model"),
            (3, "Tables"),
            (3, "Entities"),
            (3, "Balances"),
            (2, "Implementation Patterns & Consistency Rules"),
            (3, "Naming Patterns"),
            (3, "Structure Patterns"),
            (3, "Format Patterns"),
            (3, "Process Patterns"),
            (3, "Enforcement Guidelines"),
            (2, "Project Structure & Boundaries"),
            (3, "Complete Project Directory Structure"),
            (3, "Architectural Boundaries"),
            (3, "Requirements to Structure Mapping"),
            (2, "Architecture Validation Results"),
            (3, "Coherence Validation ✅"),
            (3, "Requirements Coverage Validation ✅"),
            (3, "Gap Analysis Results"),
            (4, "Consequences (4)"),
            (1, "Glossary"),
            (2, "Minor unit"),
            (2, "Household"),
        ]
    );
    // The front matter (and its closing `---`, which is no setext underline) comes first.
    assert_eq!(doc.front_matter, Some(12));
    assert_eq!(doc.headings[0].line, 14);
    let lines: Vec<&str> = ARCHITECTURE.lines().collect();
    for h in &doc.headings {
        let first = lines[h.line - 1];
        let atx = format!("{} ", "#".repeat(usize::from(h.level)));
        assert!(
            first.starts_with(&atx) || underline(lines[h.line]).is_some(),
            "line {} is not the heading `{}`: {first}",
            h.line,
            h.name
        );
    }
    assert_eq!(doc.lines, lines.len());
    assert_eq!(doc.bytes, ARCHITECTURE.len());
}

#[test]
fn a_section_runs_to_the_next_heading_of_its_level_or_higher() {
    // Its subsections, its fenced code and the `---` rule before the next `##` are all in it.
    let data_model = section(ARCHITECTURE, "Data Model");
    assert_eq!(
        data_model,
        between(
            ARCHITECTURE,
            "## Data Model",
            Some("## Implementation Patterns & Consistency Rules")
        )
    );
    assert!(data_model.contains("### Balances") && data_model.contains("CREATE TABLE expenses"));
    assert!(
        data_model.contains("# [allow(dead_code)]"),
        "fenced `#` line"
    );
    assert!(data_model.ends_with("---\n\n"), "{data_model}");

    // Nested: an ADR holds its consequences and stops at the next ADR.
    assert_eq!(
        section(ARCHITECTURE, "ADR-001: SQLite through sqlx"),
        between(
            ARCHITECTURE,
            "### ADR-001: SQLite through sqlx",
            Some("### ADR-002: Sessions in a signed cookie")
        )
    );
    let doc = parse(ARCHITECTURE);
    let core = doc.find("Core Architectural Decisions").unwrap();
    let nested: Vec<&str> = doc.within(core).iter().map(|h| h.name.as_str()).collect();
    assert_eq!(
        nested,
        [
            "Core Architectural Decisions",
            "Decision Priority Analysis",
            "ADR-001: SQLite through sqlx",
            "Consequences",
            "ADR-002: Sessions in a signed cookie",
            "Consequences (2)",
            "ADR-003: Money as integer minor units",
            "Consequences (3)",
        ]
    );
    // The level-1 title holds everything up to the next level-1 heading (the setext appendix).
    assert_eq!(
        section(ARCHITECTURE, "Architecture Decision Document"),
        between(
            ARCHITECTURE,
            "# Architecture Decision Document",
            Some("Glossary")
        )
    );
    // The last section runs to the end of the document.
    assert_eq!(
        section(ARCHITECTURE, "Household"),
        "Household\n---------\n\nA group of members who share expenses.\n"
    );
}

#[test]
fn lines_inside_fences_are_never_headings() {
    let doc = parse(ARCHITECTURE);
    for h in &doc.headings {
        for fenced in [
            "Server",
            "Client",
            "Not a heading",
            "[allow",
            "a comment line",
        ] {
            assert!(!h.text.contains(fenced), "`{}` is fenced", h.text);
        }
    }
    // A tilde fence is not closed by backticks; a four-backtick fence not by three.
    let process = section(ARCHITECTURE, "Process Patterns");
    assert!(process.contains("## Not a heading either"), "{process}");
    let tree = section(ARCHITECTURE, "Complete Project Directory Structure");
    assert!(tree.contains("└── client/"), "{tree}");

    let text = "# Top\n\n```bash   \n# comment\n```\n\n## After\n\n  ~~~~ info string\n# x\n~~~\n\
                # still fenced\n~~~~~\n\n## Last\n\n```\n# an unclosed fence runs to the end\n";
    assert_eq!(names(&parse(text)), [(1, "Top"), (2, "After"), (2, "Last")]);
    // A backtick run with a backtick after it is inline code, not a fence.
    let inline = "``` not `a fence` ```\n# Heading\n";
    assert_eq!(names(&parse(inline)), [(1, "Heading")]);
    // An HTML comment (as BMad templates write their guidance) hides what it holds.
    let comment = "# A\n<!-- guidance\n# not a heading\n-->\n## B\n<!-- one line --> \n## C\n";
    assert_eq!(names(&parse(comment)), [(1, "A"), (2, "B"), (2, "C")]);
}

#[test]
fn setext_headings_are_read_as_commonmark_reads_them() {
    let doc = parse(ARCHITECTURE);
    let glossary = doc.find("glossary").unwrap();
    assert_eq!(
        (doc.headings[glossary].level, doc.headings[glossary].lines()),
        (1, 14)
    );
    assert!(section(ARCHITECTURE, "Minor unit").ends_with("a yen for JPY.\n\n"));

    let text = "Title\n=====\n\nA paragraph of\ntwo lines\n---\n\ntext\n\n---\n\n- a list item\n---\n\n\
                > a quote\n---\n\n| a | b |\n|---|---|\n\n=====\n\n    indented code\n---\nLast\n-\n";
    let doc = parse(text);
    assert_eq!(
        names(&doc),
        [(1, "Title"), (2, "A paragraph of two lines"), (2, "Last")]
    );
    // A multi-line setext heading starts on its first line.
    assert_eq!(doc.headings[1].line, 4);
    assert_eq!(
        section(text, "A paragraph of two lines"),
        &text[text.find("A paragraph").unwrap()..text.find("Last").unwrap()]
    );
}

#[test]
fn closing_hashes_are_dropped_and_other_hashes_kept() {
    let doc = parse(ARCHITECTURE);
    let adr = doc.find("ADR-003: Money as integer minor units").unwrap();
    assert_eq!(
        doc.headings[adr].text,
        "ADR-003: Money as integer minor units"
    );
    assert!(
        section(ARCHITECTURE, "ADR-003")
            .starts_with("### ADR-003: Money as integer minor units ###\n")
    );

    let text = "# C#\n## Tags ##   \n### F# and C# ###\n#### ####\n#hashtag\n####### seven\n   # three spaces\n    # four spaces\n##\tTab\n";
    let doc = parse(text);
    let headings: Vec<(u8, &str)> = doc
        .headings
        .iter()
        .map(|h| (h.level, h.text.as_str()))
        .collect();
    assert_eq!(
        headings,
        [
            (1, "C#"),
            (2, "Tags"),
            (3, "F# and C#"),
            (4, ""),
            (1, "three spaces"),
            (2, "Tab"),
        ]
    );
}

#[test]
fn a_repeated_heading_is_named_by_its_number_and_the_first_by_its_text() {
    let doc = parse(ARCHITECTURE);
    let first = doc.find("Consequences").unwrap();
    assert!(section(ARCHITECTURE, "Consequences").contains("VACUUM INTO"));
    assert!(section(ARCHITECTURE, "consequences (3)").contains("Sums never drift"));
    assert!(section(ARCHITECTURE, "Consequences (4)").contains("which formats it reads"));
    let all: Vec<usize> = doc.namesakes(first);
    assert_eq!(all.len(), 4);
    assert_eq!(doc.namesakes(doc.find("Consequences (2)").unwrap()), all);
    assert_eq!(doc.find("Consequences (5)"), Err(Miss::NotFound));
}

#[test]
fn a_query_matches_text_then_anchor_then_unnumbered_then_a_unique_start() {
    let doc = parse(ARCHITECTURE);
    let name = |q: &str| doc.find(q).map(|i| doc.headings[i].name.as_str());
    assert_eq!(name("Data Model"), Ok("Data Model"));
    assert_eq!(name("  ## data   MODEL  "), Ok("Data Model"));
    assert_eq!(name("data-model"), Ok("Data Model"));
    assert_eq!(
        name("implementation-patterns--consistency-rules"),
        Ok("Implementation Patterns & Consistency Rules")
    );
    assert_eq!(name("ADR-002"), Ok("ADR-002: Sessions in a signed cookie"));
    assert_eq!(name("Coherence Validation"), Ok("Coherence Validation ✅"));
    // Anchors as models write them in stories' references start headings too.
    assert_eq!(
        name("Project-Structure"),
        Ok("Project Structure & Boundaries")
    );
    assert_eq!(name("ADR-001-SQLite"), Ok("ADR-001: SQLite through sqlx"));
    // A start counts at a word's end only, and only when one heading has it: `ADR` starts three.
    assert_eq!(name("Data"), Ok("Data Model"));
    assert_eq!(name("ADR-00"), Err(Miss::NotFound));
    match doc.find("ADR") {
        Err(Miss::Ambiguous(at)) => assert_eq!(at.len(), 3),
        other => panic!("{other:?}"),
    }
    assert_eq!(name("Security"), Err(Miss::NotFound));
    assert_eq!(name(" # "), Err(Miss::Empty));

    let numbered =
        parse("# Doc\n## 3. Data Model\n### 3.1 Tables\n## Story 1.1: A\n## Story 1.10: B\n");
    let name = |q: &str| numbered.find(q).map(|i| numbered.headings[i].name.as_str());
    assert_eq!(name("Data Model"), Ok("3. Data Model"));
    assert_eq!(name("tables"), Ok("3.1 Tables"));
    assert_eq!(name("Story 1.1"), Ok("Story 1.1: A"));
    assert_eq!(name("Story 1.10"), Ok("Story 1.10: B"));
}

#[test]
fn front_matter_only_when_it_opens_and_closes() {
    let text = "---\ntitle: x # a comment, not a heading\n---\n# Title\n";
    let doc = parse(text);
    assert_eq!(
        (doc.front_matter, names(&doc)),
        (Some(3), vec![(1, "Title")])
    );
    // Never closed: a thematic break and a paragraph, whose `---`-less lines stay text.
    let text = "---\n# Title\ntext\n";
    assert_eq!(parse(text).front_matter, None);
    assert_eq!(names(&parse(text)), [(1, "Title")]);
    // A byte-order mark and CRLF line ends change nothing but the bytes.
    let text = "\u{feff}# Title\r\n\r\nbody\r\n## Part\r\nmore\r\n";
    let doc = parse(text);
    assert_eq!(names(&doc), [(1, "Title"), (2, "Part")]);
    assert_eq!(section(text, "Part"), "## Part\r\nmore\r\n");
}

#[test]
fn the_listing_gives_level_line_and_size() {
    let doc = parse(ARCHITECTURE);
    let i = doc.find("ADR-002").unwrap();
    let listing = Outline::listing(doc.within(i));
    let h = &doc.headings[i];
    assert_eq!(
        listing,
        format!(
            "### ADR-002: Sessions in a signed cookie  [line {}, {} lines, {}]\n\
             #### Consequences (2)  [line {}, {} lines, {}]\n",
            h.line,
            h.lines(),
            size(h.bytes.len()),
            doc.headings[i + 1].line,
            doc.headings[i + 1].lines(),
            size(doc.headings[i + 1].bytes.len()),
        )
    );
    assert_eq!(
        (size(999), size(1000), size(61_440)),
        (
            "999 B".to_owned(),
            "1.0 KB".to_owned(),
            "61.4 KB".to_owned()
        )
    );
}

// ---------------------------------------------------------------------------------------------
// The pinned bmad-method package.

/// The installed `bmad-method` package, or `None` after a skip notice (a failure when required).
fn bmad_package() -> Option<PathBuf> {
    let dir = std::env::var_os("BATON_TEST_BMAD_DIR")
        .map(|d| PathBuf::from(d).join("node_modules/bmad-method"))
        .filter(|d| d.join("package.json").is_file());
    if dir.is_none() {
        let msg = "bmad-method is not installed under $BATON_TEST_BMAD_DIR; run .ci/run (it \
                   installs bmad-method@6.12.0 into target/bmad) and set \
                   BATON_TEST_BMAD_DIR=target/bmad";
        assert!(
            std::env::var("BATON_TEST_BMAD_REQUIRED").as_deref() != Ok("1"),
            "BATON_TEST_BMAD_REQUIRED=1 but {msg}"
        );
        eprintln!("SKIPPED: {msg}");
    }
    dir
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn bmad_templates_outline_as_bmad_writes_them() {
    let Some(dir) = bmad_package() else { return };

    // The PRD template holds a whole PRD inside a ```markdown fence: none of its headings count.
    let prd = read(&dir, "src/bmm-skills/plan/bmad-prd/assets/prd-template.md");
    let doc = parse(&prd);
    let top: Vec<(u8, &str)> = names(&doc).into_iter().filter(|(l, _)| *l <= 2).collect();
    assert_eq!(
        top,
        [
            (1, "PRD Template"),
            (2, "Essential Spine *(almost always present)*"),
            (
                2,
                "Adapt-In Menu *(add the clusters the product calls for)*"
            ),
        ]
    );
    let spine = section(&prd, "Essential Spine");
    assert!(spine.contains("## 4. Features") && spine.contains("#### FR-1:"));

    // The epics template: front matter, an inventory with five subsections, then the epics.
    let epics = read(
        &dir,
        "src/bmm-skills/plan/bmad-create-epics-and-stories/templates/epics-template.md",
    );
    let doc = parse(&epics);
    assert_eq!(doc.front_matter, Some(4));
    let inventory = doc.find("Requirements Inventory").unwrap();
    assert_eq!(doc.within(inventory).len(), 6);
    let story = section(&epics, "Story {{N}}.{{M}}");
    assert!(story.starts_with("### Story {{N}}.{{M}}: {{story_title_N_M}}\n"));
    assert!(
        story.contains("**Given** {{precondition}}")
            && story.ends_with("<!-- End story repeat -->\n")
    );
    let epic = section(&epics, "Epic {{N}}: {{epic_title_N}}");
    assert!(epic.contains(story), "an epic holds its stories");

    // The story template: Dev Notes hold their subsections and stop at the Dev Agent Record.
    let story = read(
        &dir,
        "src/bmm-skills/v6-shims/bmad-create-story/template.md",
    );
    let dev_notes = section(&story, "Dev Notes");
    assert_eq!(
        dev_notes,
        between(&story, "## Dev Notes", Some("## Dev Agent Record"))
    );
    assert!(dev_notes.contains("[Source: docs/<file>.md#Section]"));

    // The architecture spine: front matter full of `#` comments, a fence with a `#` comment.
    let arch = read(
        &dir,
        "src/bmm-skills/plan/bmad-architecture/assets/spine-template.md",
    );
    let doc = parse(&arch);
    assert_eq!(doc.front_matter, Some(14));
    assert_eq!(
        names(&doc),
        [
            (1, "Architecture Spine — {name}"),
            (2, "Design Paradigm"),
            (2, "Inherited Invariants"),
            (2, "Invariants & Rules"),
            (3, "AD-1 — {decision}"),
            (2, "Consistency Conventions"),
            (2, "Stack"),
            (2, "Structural Seed"),
            (2, "Capability → Architecture Map"),
            (2, "Deferred"),
        ]
    );

    // A step file that shows the epics list it asks for in fences: `## Epic List` is fenced.
    let step = read(
        &dir,
        "src/bmm-skills/plan/bmad-create-epics-and-stories/steps/step-02-design-epics.md",
    );
    let doc = parse(&step);
    assert!(doc.find("Epic List").is_err());
    let design = section(&step, "Design Epic Structure Collaboratively");
    assert_eq!(
        design,
        between(
            &step,
            "### 3. Design Epic Structure Collaboratively",
            Some("### 4. Present Epic List for Review")
        )
    );
    assert!(design.contains("### Epic 2: [Epic Title]"));
}

/// On every Markdown document of the package, sections nest: each starts at its heading's line,
/// a section ends where the next heading of its level or higher starts, and holds the deeper
/// ones after it.
#[test]
fn every_bmad_document_splits_into_nested_sections() {
    let Some(dir) = bmad_package() else { return };
    let files = markdown_files(&dir.join("src"));
    assert!(files.len() > 100, "{} documents", files.len());
    let mut headings = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let doc = parse(&text);
        headings += doc.headings.len();
        for (k, h) in doc.headings.iter().enumerate() {
            let body = &text[h.bytes.clone()];
            let first = body.lines().next().unwrap_or_default();
            assert!(
                atx(first).is_some()
                    || underline(body.lines().nth(1).unwrap_or_default()).is_some(),
                "{}:{} `{}`",
                path.display(),
                h.line,
                h.name
            );
            match doc.headings.get(k + 1) {
                Some(next) if next.level <= h.level => {
                    assert_eq!(h.bytes.end, next.bytes.start, "{}", path.display());
                }
                Some(next) => assert!(h.bytes.end >= next.bytes.end, "{}", path.display()),
                None => assert_eq!(h.bytes.end, text.len(), "{}", path.display()),
            }
            assert_eq!(
                find_again(&doc, h),
                Some(k),
                "{}: `{}`",
                path.display(),
                h.name
            );
        }
    }
    assert!(headings > 1000, "{headings} headings");
}

/// The heading a query of `h`'s name finds (every heading can be named).
fn find_again(doc: &Outline, h: &Heading) -> Option<usize> {
    if h.name.is_empty() {
        return doc.headings.iter().position(|x| x == h);
    }
    doc.find(&h.name).ok()
}

/// The headings CommonMark finds, as `mdast-util-from-markdown` (which `bmad-method` installs)
/// parses them with the front matter blanked out: `path\tline\tlevel` lines.
const COMMONMARK_HEADINGS: &str = r#"
import fs from 'fs';
const base = process.argv[1];
const {fromMarkdown} = await import(base + '/mdast-util-from-markdown/index.js');
for (const f of fs.readFileSync(0, 'utf8').split('\n').filter(Boolean)) {
  const lines = fs.readFileSync(f, 'utf8').split('\n');
  if (lines[0].replace(/^\uFEFF/, '').trimEnd() === '---') {
    const end = lines.findIndex((l, i) => i > 0 && ['---', '...'].includes(l.trimEnd()));
    for (let j = 0; j <= end; j++) lines[j] = '';
  }
  const walk = (n) => {
    if (n.type === 'heading') console.log(`${f}\t${n.position.start.line}\t${n.depth}`);
    (n.children || []).forEach(walk);
  };
  walk(fromMarkdown(lines.join('\n')));
}
"#;

/// Every heading of every document of the package, and of the architecture fixture, is the one
/// a CommonMark parser finds (none of them nests a heading in a list item or a quote).
#[test]
fn headings_are_the_ones_commonmark_finds() {
    let Some(dir) = bmad_package() else { return };
    let modules = std::fs::canonicalize(dir.join("..")).unwrap();
    let mut files = markdown_files(&dir.join("src"));
    files.push(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bmad/architecture.md"),
    );
    let list: String = files.iter().map(|f| format!("{}\n", f.display())).collect();
    let mut node = std::process::Command::new("node")
        .args(["--input-type=module", "-e", COMMONMARK_HEADINGS])
        .arg(&modules)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("node runs (it installed bmad-method)");
    std::io::Write::write_all(&mut node.stdin.take().unwrap(), list.as_bytes()).unwrap();
    let out = node.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut ours = String::new();
    for f in &files {
        for h in parse(&std::fs::read_to_string(f).unwrap()).headings {
            ours.push_str(&format!("{}\t{}\t{}\n", f.display(), h.line, h.level));
        }
    }
    let theirs = String::from_utf8(out.stdout).unwrap();
    assert!(theirs.lines().count() > 1000);
    assert_eq!(ours, theirs);
}

fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}
