//! Finding the menu a BMad skill ends its turn with, by score.
//!
//! BMad's skills end a step with a menu: bracketed keys (`[A] Advanced Elicitation [P] Party
//! Mode [C] Continue`, one per line or on one line) or numbered options, often after a prompt
//! such as "Select an option". A turn is scored:
//!
//! | evidence | points |
//! |---|---|
//! | structural markers: two or more bracketed keys, numbered options, or a `[C] Continue` gate | +30 |
//! | position: the options close the turn (nothing after them but a prompt) | +20 |
//! | option count: 2 to 9 options | +20 |
//! | a `[C] Continue` option, or BMad's final `[C] Complete …` | +10 |
//! | a prompt that asks for a choice ("select", "choose", "confirm", "your choice", "enter", "pick") | +20 |
//!
//! and is a menu at 70 points or more. One bracketed key after a lead-in on its line counts when
//! its label closes the line as a title does (`**All validations complete!** [C] Complete
//! Workflow`, BMad's final menu); the lead-in is then its prompt. Only the last block of options in the turn is read (what
//! follows it may only be a prompt); a list in the middle of a turn is not a menu. Text inside a code fence, a blockquote or an example
//! (a paragraph that opens with `Example:`, or a heading naming examples) is never read: a skill
//! documenting its own menu is not presenting one.

use std::sync::LazyLock;

/// The least score of a menu.
pub const THRESHOLD: u32 = 70;

/// One option of a menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MenuOption {
    /// What to answer to choose it (`C`, `2`).
    pub key: String,
    /// What it says.
    pub label: String,
}

/// What was found in a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    /// The score.
    pub score: u32,
    /// The options of the last menu-like block.
    pub options: Vec<MenuOption>,
}

impl Detection {
    /// Whether it is a menu.
    pub fn is_menu(&self) -> bool {
        self.score >= THRESHOLD
    }

    /// The `Continue` option, when there is one.
    pub fn continue_option(&self) -> Option<&MenuOption> {
        self.options
            .iter()
            .find(|o| o.label.trim().to_lowercase().starts_with("continue"))
    }
}

static NUMBERED: LazyLock<regex::Regex> = LazyLock::new(|| {
    #[allow(clippy::expect_used)]
    regex::Regex::new(r"^\s*(?:[-*]\s+)?\**(\d{1,2})[.)]\**\s+(.+?)\s*$").expect("a valid pattern")
});

const PROMPTS: [&str; 8] = [
    "select",
    "choose",
    "confirm",
    "your choice",
    "enter ",
    "pick",
    "which option",
    "what would you like",
];

/// The longest numbered option: a longer item is a step of a list, not a choice.
const MAX_OPTION: usize = 100;

/// The lines a menu may be read from: outside fences, blockquotes and examples.
fn readable(text: &str) -> Vec<&str> {
    #[derive(PartialEq)]
    enum Example {
        No,
        /// Opened by `Example:`: ends at a blank line.
        Paragraph,
        /// Under a heading naming examples: ends at the next heading.
        Section,
    }
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut example = Example::No;
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(open) = fence {
            if t.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = Some(&t[..3]);
            continue;
        }
        if t.starts_with('>') {
            continue;
        }
        let lower = t.to_lowercase();
        let bare = lower.trim_start_matches(['#', '*', '_', ' ']);
        if t.starts_with('#') {
            example = if bare.starts_with("example") {
                Example::Section
            } else {
                Example::No
            };
        } else if ["example:", "examples:", "for example:", "e.g.:"]
            .iter()
            .any(|p| bare.starts_with(p))
        {
            if example == Example::No {
                example = Example::Paragraph;
            }
        } else if t.is_empty() && example == Example::Paragraph {
            example = Example::No;
        }
        if example == Example::No {
            out.push(line);
        }
    }
    out
}

/// Scores `turn`, the text an agent ended its turn with.
pub fn detect(turn: &str) -> Detection {
    let lines = readable(turn);
    // Trailing blank lines do not count against the position.
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    let lines = &lines[..end];
    let mut best = Detection {
        score: 0,
        options: Vec::new(),
    };
    // The last block of option lines: bracketed or numbered.
    let mut i = lines.len();
    let mut trailing_prompt = false;
    let mut prompt = false;
    while i > 0 {
        let l = lines[i - 1].trim();
        let lower = l.to_lowercase();
        if !l.is_empty() && options_of(l).is_empty() {
            if PROMPTS.iter().any(|p| lower.contains(p)) || l.ends_with('?') || l.ends_with(':') {
                trailing_prompt = true;
                prompt |= PROMPTS.iter().any(|p| lower.contains(p));
                i -= 1;
                continue;
            }
            break;
        }
        if !l.is_empty() {
            break;
        }
        i -= 1;
    }
    let tail_end = i;
    let mut start = tail_end;
    while start > 0 && !options_of(lines[start - 1].trim()).is_empty() {
        start -= 1;
    }
    let block = &lines[start..tail_end];
    let options: Vec<MenuOption> = block.iter().flat_map(|l| options_of(l.trim())).collect();
    if options.is_empty() {
        return best;
    }
    // A prompt on an option line, or right before the options, counts as well; so does the
    // lead-in of a single option closing the turn on its line.
    prompt |= block.iter().any(|l| {
        let lower = l.to_lowercase();
        PROMPTS.iter().any(|p| lower.contains(p))
    });
    prompt |= options.len() == 1 && block.len() == 1 && led_in(block[0].trim());
    if start > 0 {
        let before = lines[..start]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.to_lowercase())
            .unwrap_or_default();
        prompt |= PROMPTS.iter().any(|p| before.contains(p));
    }
    let bracketed = block
        .iter()
        .any(|l| !bracketed_options(l.trim()).is_empty());
    let continues = options
        .iter()
        .any(|o| o.key.eq_ignore_ascii_case("c") && o.label.to_lowercase().starts_with("continue"));
    // BMad's final menu: one `[C] Complete …` that ends the workflow.
    let completes = options.len() == 1
        && options[0].key.eq_ignore_ascii_case("c")
        && options[0].label.to_lowercase().starts_with("complete");
    let mut score = 0;
    if options.len() >= 2 || (bracketed && (continues || completes)) {
        score += 30;
    }
    // The options close the turn (at most a prompt after them).
    if tail_end == lines.len() || trailing_prompt {
        score += 20;
    }
    if (2..=9).contains(&options.len()) {
        score += 20;
    }
    if continues || completes {
        score += 10;
    }
    if prompt {
        score += 20;
    }
    best.score = score;
    best.options = options;
    best
}

fn bracketed_options(line: &str) -> Vec<MenuOption> {
    let line = line.trim_start_matches(['-', '*', ' ']).replace("**", "");
    // Every `[K]` key (1 to 3 letters or digits) and where it starts and ends.
    let mut keys: Vec<(usize, usize, &str)> = Vec::new();
    let mut from = 0;
    while let Some(open) = line[from..].find('[').map(|i| from + i) {
        let Some(close) = line[open..].find(']').map(|i| open + i) else {
            break;
        };
        let key = &line[open + 1..close];
        if (1..=3).contains(&key.len()) && key.chars().all(|c| c.is_ascii_alphanumeric()) {
            keys.push((open, close + 1, key));
        }
        from = close + 1;
    }
    // Options open the line (`[C] Continue`), or follow a prompt on it when there are two or
    // more (`Select an Option: [A] Advanced [C] Continue`); one key inside a sentence is not a
    // menu of its own.
    let opens = keys.first().is_some_and(|(at, _, _)| *at == 0);
    let gate = keys.len() == 1
        && keys[0].2.eq_ignore_ascii_case("c")
        && line.trim_end().ends_with([':', '?']);
    // One key after a lead-in, its label closing the line as an option's title does
    // (`**All validations complete!** [C] Complete Workflow`): BMad's final menu.
    let closing = keys.len() == 1 && titled(&line[keys[0].1..]);
    if !opens && keys.len() < 2 && !gate && !closing {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, (_, after, key)) in keys.iter().enumerate() {
        let until = keys.get(i + 1).map_or(line.len(), |(next, _, _)| *next);
        let label = line[*after..until]
            .trim()
            .trim_end_matches(['|', ',', '/'])
            .trim();
        if !label.is_empty() {
            out.push(MenuOption {
                key: (*key).to_owned(),
                label: label.to_owned(),
            });
        }
    }
    out
}

/// The longest title an option closing a line may have, in words.
const MAX_TITLE_WORDS: usize = 5;

/// Whether `label` reads as an option's title: a capital first, a few words, no sentence
/// punctuation at its end (`Complete Workflow`, not `to continue later, as the docs say.`).
fn titled(label: &str) -> bool {
    let label = label.trim();
    label.chars().next().is_some_and(char::is_uppercase)
        && label.split_whitespace().count() <= MAX_TITLE_WORDS
        && !label.ends_with(['.', ',', ';'])
        && !label.contains(['[', ']'])
}

/// Whether `line` has text before its first option, which then prompts for it
/// (`**All validations complete!** [C] Complete Workflow`).
fn led_in(line: &str) -> bool {
    let line = line.trim_start_matches(['-', '*', ' ']).replace("**", "");
    line.find('[')
        .is_some_and(|at| !line[..at].trim().is_empty())
}

fn options_of(line: &str) -> Vec<MenuOption> {
    let b = bracketed_options(line);
    if !b.is_empty() {
        return b;
    }
    NUMBERED
        .captures(line)
        .filter(|c| {
            c.get(2)
                .is_some_and(|l| l.as_str().chars().count() <= MAX_OPTION)
        })
        .and_then(|c| {
            Some(vec![MenuOption {
                key: c.get(1)?.as_str().to_owned(),
                label: c.get(2)?.as_str().replace("**", "").trim().to_owned(),
            }])
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bmads_one_line_menu_is_a_menu() {
        let d =
            detect("I drafted the vision.\n\n[A] Advanced Elicitation [P] Party Mode [C] Continue");
        assert!(d.is_menu(), "{d:?}");
        assert_eq!(d.score, 80);
        let keys: Vec<&str> = d.options.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["A", "P", "C"]);
        assert_eq!(d.continue_option().map(|o| o.key.as_str()), Some("C"));
    }

    #[test]
    fn scoring_table() {
        let table: [(&str, u32); 8] = [
            // One option per line, a prompt after: every point.
            (
                "Step 2 done.\n\n**Select an option:**\n- **[A]** Advanced Elicitation\n- **[P]** Party Mode\n- **[C]** Continue\n",
                100,
            ),
            ("Done.\n[A] Advanced [C] Continue\n\nSelect an option:", 100),
            // Numbered options closing the turn, with a prompt.
            (
                "What next?\n1. Create the PRD\n2. Validate the PRD\n3. Edit the PRD\nChoose 1-3:",
                90,
            ),
            // Numbered steps in the middle of a turn: only the block that closes a turn is read.
            (
                "Plan:\n1. read\n2. write\n\nThen I will report back with the results of all of it.",
                0,
            ),
            // A single option.
            ("[C] Continue", 60),
            // Prose.
            ("I wrote the architecture document.", 0),
            // Options in a code fence, a blockquote, an example.
            (
                "Here is the menu format:\n```\n[A] Advanced [P] Party [C] Continue\n```\n",
                0,
            ),
            ("> [A] Advanced [P] Party [C] Continue\n", 0),
        ];
        for (text, want) in table {
            assert_eq!(detect(text).score, want, "{text:?}");
        }
    }

    #[test]
    fn options_after_a_prompt_on_the_same_line() {
        let d =
            detect("**Select an Option:** [A] Advanced Elicitation [P] Party Mode [C] Continue");
        assert_eq!(d.score, 100, "{d:?}");
        assert_eq!(d.options.len(), 3);
        // BMad's continue gate: one `[C]` at the end of a prompt.
        let gate = detect("**Confirm the requirements are complete to [C] continue:**");
        assert!(gate.is_menu(), "{gate:?}");
        assert!(gate.continue_option().is_some());
        let sentence = detect("You could press [C] to continue later, as the docs say.");
        assert!(!sentence.is_menu(), "{sentence:?}");
        assert!(!detect("Orientation → [Walkthrough] → Detail Pass → Testing").is_menu());
    }

    #[test]
    fn bmads_final_menu_after_a_lead_in_is_a_menu() {
        // `bmad-create-epics-and-stories`, `step-04-final-validation.md`.
        let d = detect(
            "Every FR is covered; epics.md is saved.\n\n**All validations complete!** [C] Complete Workflow",
        );
        assert!(d.is_menu(), "{d:?}");
        assert_eq!(d.score, 80);
        assert_eq!(
            d.options,
            [MenuOption {
                key: "C".into(),
                label: "Complete Workflow".into()
            }]
        );
        // Not a continue: finishing is a choice of its own.
        assert!(d.continue_option().is_none());
        // A key in a sentence, or a lead-in with a sentence after it, is still not one.
        for text in [
            "You could press [C] to continue later, as the docs say.",
            "Saved it all. [C] was the key you pressed before, and it worked.",
            "**Done!** [C] complete the form on the next page and then come back.",
        ] {
            assert!(!detect(text).is_menu(), "{text:?}: {:?}", detect(text));
        }
    }

    #[test]
    fn examples_are_not_menus() {
        for text in [
            "Example:\n[A] Advanced [P] Party [C] Continue\n",
            "## Examples\n\n1. one\n2. two\n\nSelect an option\n",
            "**Example:** the menu looks like\n[A] Advanced [P] Party [C] Continue",
        ] {
            assert!(!detect(text).is_menu(), "{text:?}: {:?}", detect(text));
        }
        // A real menu after an example block still counts.
        let d = detect("Example:\n[X] not this\n\n## Your turn\n\n[A] Advanced [C] Continue\n");
        assert!(d.is_menu(), "{d:?}");
    }
}
