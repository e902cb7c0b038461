//! The README and the guide (`docs/`) stay true to the repository and to the command line:
//! every relative link leads to a file that exists, every `metabench` command line in a
//! fenced code block names only subcommands and flags the CLI defines, and the README
//! stays short enough to read in five minutes.
//!
//! These tests read files only: they take no [`crate::phase`] and run beside any module's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The README's limit: what does not fit belongs in the guide.
const README_MAX_LINES: usize = 200;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown file below docs/, sorted.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    let mut dirs = vec![repo().join("docs")];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `path` relative to the repository, for messages.
fn shown(path: &Path) -> String {
    path.strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A fenced code block's opening or closing line: its fence (``` or ~~~, three or more)
/// and what follows it (the info string).
fn fence(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    for c in ['`', '~'] {
        let n = t.chars().take_while(|&x| x == c).count();
        if n >= 3 {
            return Some((&t[..n], t[n..].trim()));
        }
    }
    None
}

/// One fenced code block: its info string and its lines, each with its line number (1-based).
struct Block {
    info: String,
    lines: Vec<(usize, String)>,
}

/// Splits Markdown into the lines outside fenced code blocks (with their numbers) and the
/// blocks.
fn split_markdown(text: &str) -> (Vec<(usize, String)>, Vec<Block>) {
    let mut prose = Vec::new();
    let mut blocks = Vec::new();
    let mut open: Option<(String, Block)> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        match open.take() {
            None => match fence(line) {
                Some((f, info)) => {
                    let info = info.split_whitespace().next().unwrap_or("").to_owned();
                    open = Some((
                        f.to_owned(),
                        Block {
                            info,
                            lines: Vec::new(),
                        },
                    ));
                }
                None => prose.push((n, line.to_owned())),
            },
            Some((f, mut block)) => {
                let closes = fence(line).is_some_and(|(g, rest)| {
                    rest.is_empty() && g.starts_with(&f[..1]) && g.len() >= f.len()
                });
                if closes {
                    blocks.push(block);
                } else {
                    block.lines.push((n, line.to_owned()));
                    open = Some((f, block));
                }
            }
        }
    }
    if let Some((_, block)) = open {
        blocks.push(block);
    }
    (prose, blocks)
}

/// `line` without its inline code spans (`` `…` ``), which hold examples, not links.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        let closing = "`".repeat(ticks);
        match after.find(closing.as_str()) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                rest = after;
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of a line's Markdown links and images (`[text](target)`, `![alt](target)`),
/// reference definitions (`[name]: target`) and HTML `src="…"` / `href="…"` attributes.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        // The target ends at the parenthesis that closes the link (targets may hold
        // balanced parentheses), or at a space before a title.
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = i;
                    break;
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        let inner = after[..end].trim();
        let target = inner.split_whitespace().next().unwrap_or("");
        let target = target.trim_start_matches('<').trim_end_matches('>');
        targets.push(target.to_owned());
        rest = &after[end.min(after.len())..];
    }
    let t = line.trim_start();
    if t.starts_with('[') {
        if let Some(colon) = t.find("]: ") {
            if !t[..colon].contains("](") {
                if let Some(target) = t[colon + 3..].split_whitespace().next() {
                    targets.push(target.trim_matches(&['<', '>'][..]).to_owned());
                }
            }
        }
    }
    for attr in ["src=\"", "href=\""] {
        let mut rest = line.as_str();
        while let Some(at) = rest.find(attr) {
            let after = &rest[at + attr.len()..];
            let end = after.find('"').unwrap_or(after.len());
            targets.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    targets
}

/// The file a link target names, relative to `from` (the Markdown file), or `None` for a
/// link that is not to a file in the repository (a URL, mail, an anchor of this page).
fn linked_file(from: &Path, target: &str) -> Option<PathBuf> {
    let lower = target.to_ascii_lowercase();
    if target.is_empty()
        || target.starts_with('#')
        || lower.starts_with("http://")
        || lower.starts_with("https://")
        || lower.starts_with("mailto:")
    {
        return None;
    }
    let file = target.split(&['#', '?'][..]).next().unwrap_or("");
    if file.is_empty() {
        return None;
    }
    let file = file.replace("%20", " ");
    Some(match file.strip_prefix('/') {
        Some(abs) => repo().join(abs),
        None => match from.parent() {
            Some(dir) => dir.join(file),
            None => repo().join(file),
        },
    })
}

/// Every relative link of every Markdown file whose file does not exist, as
/// `file:line: message`; and how many relative links were checked.
fn broken_links(files: &[(PathBuf, String)]) -> (Vec<String>, usize) {
    let mut broken = Vec::new();
    let mut checked = 0;
    for (path, text) in files {
        let (prose, _) = split_markdown(text);
        for (n, line) in prose {
            for target in link_targets(&line) {
                if let Some(file) = linked_file(path, &target) {
                    checked += 1;
                    if !file.exists() {
                        broken.push(format!(
                            "{}:{n}: link to `{target}`: {} does not exist",
                            shown(path),
                            shown(&file)
                        ));
                    }
                }
            }
        }
    }
    (broken, checked)
}

/// A command of the CLI as the docs may name it: its flags (long, without `--`; short) with
/// those inherited from its parents' global arguments, and its subcommands by every name.
#[derive(Default)]
struct CliNode {
    longs: BTreeSet<String>,
    shorts: BTreeSet<char>,
    /// Name or alias → the subcommand's path.
    subcommands: BTreeMap<String, Vec<String>>,
}

/// The CLI's command tree, from its clap definition, keyed by subcommand path (`[]` is
/// `metabench` itself, `["sweep"]` is `metabench sweep`).
fn cli_tree() -> BTreeMap<Vec<String>, CliNode> {
    let mut root = metabench_cli::command();
    // Adds what clap adds at parse time: --help, --version, the `help` subcommand, and the
    // global arguments propagated to the subcommands.
    root.build();
    let mut tree = BTreeMap::new();
    // (path, command, the longs and shorts of its ancestors' global arguments)
    let mut todo = vec![(
        Vec::<String>::new(),
        &root,
        BTreeSet::<String>::new(),
        BTreeSet::<char>::new(),
    )];
    while let Some((path, cmd, inherited_longs, inherited_shorts)) = todo.pop() {
        let mut node = CliNode {
            longs: inherited_longs.clone(),
            shorts: inherited_shorts.clone(),
            ..CliNode::default()
        };
        let mut global_longs = inherited_longs;
        let mut global_shorts = inherited_shorts;
        for arg in cmd.get_arguments() {
            let mut longs: Vec<String> = arg.get_long().into_iter().map(str::to_owned).collect();
            longs.extend(
                arg.get_all_aliases()
                    .unwrap_or_default()
                    .into_iter()
                    .map(str::to_owned),
            );
            let mut shorts: Vec<char> = arg.get_short().into_iter().collect();
            shorts.extend(arg.get_all_short_aliases().unwrap_or_default());
            if arg.is_global_set() {
                global_longs.extend(longs.iter().cloned());
                global_shorts.extend(shorts.iter().copied());
            }
            node.longs.extend(longs);
            node.shorts.extend(shorts);
        }
        for sub in cmd.get_subcommands() {
            let mut sub_path = path.clone();
            sub_path.push(sub.get_name().to_owned());
            node.subcommands
                .insert(sub.get_name().to_owned(), sub_path.clone());
            for alias in sub.get_all_aliases() {
                node.subcommands.insert(alias.to_owned(), sub_path.clone());
            }
            todo.push((sub_path, sub, global_longs.clone(), global_shorts.clone()));
        }
        tree.insert(path, node);
    }
    tree
}

/// Splits a shell command line into words: quotes group and are removed, a `#` that starts
/// a word starts a comment.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') if !in_word => break,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                    in_word = true;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Whether `word` runs the metabench binary (`metabench`, `target/release/metabench`, …).
fn is_metabench(word: &str) -> bool {
    word == "metabench" || word.ends_with("/metabench")
}

/// The arguments a command line gives metabench, if it runs metabench: `metabench …` (after
/// any `VAR=value` assignments), `cargo run … -- …`, or `mpirun … metabench …`.
fn metabench_args(words: &[String]) -> Option<&[String]> {
    let is_assignment = |w: &String| {
        w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        })
    };
    let start = words.iter().position(|w| !is_assignment(w))?;
    let words = &words[start..];
    let first = words.first()?;
    let args = if is_metabench(first) {
        &words[1..]
    } else if first == "cargo" && words.get(1).is_some_and(|w| w == "run") {
        let dashes = words.iter().position(|w| w == "--")?;
        &words[dashes + 1..]
    } else if first == "mpirun" || first == "mpiexec" {
        let bin = words.iter().position(|w| is_metabench(w))?;
        &words[bin + 1..]
    } else {
        return None;
    };
    // The command ends where the shell would start another or redirect its output.
    let end = args
        .iter()
        .position(|w| {
            matches!(w.as_str(), "|" | "||" | "&&" | ";" | "&")
                || w.starts_with('>')
                || w.starts_with('<')
                || w.starts_with("2>")
        })
        .unwrap_or(args.len());
    Some(&args[..end])
}

/// The command lines of a fenced block, each with the number of its first line: lines ending
/// in `\` are joined to the next. In a block where some lines start with a `$ ` prompt,
/// only those are commands (the others are their output).
fn block_commands(block: &Block) -> Vec<(usize, String)> {
    let prompted = block
        .lines
        .iter()
        .any(|(_, l)| l.trim_start().starts_with("$ "));
    let mut commands = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in &block.lines {
        let (start, mut text) = match current.take() {
            Some((start, text)) => (start, text + " " + line.trim()),
            None => {
                let t = line.trim_start();
                let t = match t.strip_prefix("$ ") {
                    Some(command) => command,
                    None if prompted => continue,
                    None => t,
                };
                (*n, t.to_owned())
            }
        };
        if text.ends_with('\\') {
            text.pop();
            current = Some((start, text));
        } else {
            commands.push((start, text));
        }
    }
    commands.extend(current);
    commands
}

/// Blocks that hold files or program output, not commands to run.
const NOT_COMMANDS: &[&str] = &["text", "json", "toml", "csv", "output"];

/// `metabench` and the subcommands of `path`, as a user types them.
fn command_name(path: &[String]) -> String {
    std::iter::once("metabench")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Checks one metabench command line against the CLI: each subcommand and each flag must
/// exist. Returns one message per unknown word.
fn check_command(tree: &BTreeMap<Vec<String>, CliNode>, args: &[String]) -> Vec<String> {
    let root = &tree[&Vec::<String>::new()];
    let mut node = root;
    let mut path: Vec<String> = Vec::new();
    let mut problems = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let word = args[i].as_str();
        i += 1;
        if word == "--" {
            // What follows `--` is the command's own trailing arguments; `matrix` takes a
            // plan there (`-- sweep …`), checked as a command of its own.
            match args.get(i).and_then(|w| root.subcommands.get(w)) {
                Some(sub) => {
                    path = sub.clone();
                    node = &tree[&path];
                    i += 1;
                    continue;
                }
                None => break,
            }
        }
        if let Some(long) = word.strip_prefix("--") {
            let long = long.split('=').next().unwrap_or(long);
            if !node.longs.contains(long) {
                problems.push(format!(
                    "`--{long}` is not a flag of `{}`",
                    command_name(&path)
                ));
            }
        } else if word.len() > 1
            && word.starts_with('-')
            && !word[1..].starts_with(|c: char| c.is_ascii_digit())
        {
            for c in word[1..].chars() {
                if !node.shorts.contains(&c) {
                    problems.push(format!("`-{c}` is not a flag of `{}`", command_name(&path)));
                }
            }
        } else if !node.subcommands.is_empty() {
            // A command with subcommands takes one next (flag values never come first
            // here: the only arguments such commands take are flags without values).
            match node.subcommands.get(word) {
                Some(sub) => {
                    path = sub.clone();
                    node = &tree[&path];
                }
                None => {
                    problems.push(format!(
                        "`{word}` is not a subcommand of `{}`",
                        command_name(&path)
                    ));
                    break;
                }
            }
        }
    }
    problems
}

/// Every metabench command line in the fenced blocks of `files` whose subcommands or flags
/// the CLI does not have, as `file:line: message`; and how many command lines were checked.
fn unknown_flags(
    tree: &BTreeMap<Vec<String>, CliNode>,
    files: &[(PathBuf, String)],
) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut checked = 0;
    for (path, text) in files {
        let (_, blocks) = split_markdown(text);
        for block in blocks
            .iter()
            .filter(|b| !NOT_COMMANDS.contains(&b.info.as_str()))
        {
            for (n, command) in block_commands(block) {
                let words = shell_words(&command);
                let Some(args) = metabench_args(&words) else {
                    continue;
                };
                checked += 1;
                for problem in check_command(tree, args) {
                    problems.push(format!("{}:{n}: {problem}", shown(path)));
                }
            }
        }
    }
    (problems, checked)
}

fn all_markdown() -> Vec<(PathBuf, String)> {
    markdown_files()
        .into_iter()
        .map(|p| {
            let text = read(&p);
            (p, text)
        })
        .collect()
}

#[test]
fn every_relative_link_leads_to_a_file() {
    let files = all_markdown();
    assert!(
        files.len() > 2,
        "found only {:?}: the guide is in docs/",
        files.iter().map(|(p, _)| shown(p)).collect::<Vec<_>>()
    );
    let (broken, checked) = broken_links(&files);
    assert!(
        checked > 20,
        "only {checked} relative links found: is the link parser broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_chapter_is_in_the_summary() {
    let src = repo().join("docs/src");
    let summary = src.join("SUMMARY.md");
    let linked: BTreeSet<PathBuf> = split_markdown(&read(&summary))
        .0
        .iter()
        .flat_map(|(_, line)| link_targets(line))
        .filter_map(|t| linked_file(&summary, &t))
        .collect();
    let missing: Vec<String> = markdown_files()
        .into_iter()
        .filter(|p| p.starts_with(&src) && *p != summary && !linked.contains(p))
        .map(|p| shown(&p))
        .collect();
    assert!(
        missing.is_empty(),
        "chapters not listed in docs/src/SUMMARY.md (mdBook would not build them): {missing:?}"
    );
}

#[test]
fn documented_commands_use_only_real_subcommands_and_flags() {
    let tree = cli_tree();
    assert!(
        tree.contains_key(&vec!["sweep".to_owned()]),
        "the CLI has no `sweep`: {:?}",
        tree.keys().collect::<Vec<_>>()
    );
    let (problems, checked) = unknown_flags(&tree, &all_markdown());
    assert!(
        checked > 20,
        "only {checked} metabench command lines found in fenced blocks"
    );
    assert!(
        problems.is_empty(),
        "command lines the CLI would refuse:\n{}",
        problems.join("\n")
    );
}

/// The checker itself catches what it is for: an unknown flag, a flag of another
/// subcommand, an unknown subcommand, in every form a command line takes, with its file and
/// line; and it leaves output, prose and other programs alone.
#[test]
fn the_command_check_catches_wrong_flags() {
    let tree = cli_tree();
    let doc = "\
Prose mentions `metabench sweep --no-such-flag` without being checked.

```sh
metabench sweep --conc 1..4 --json out.json
metabench sweep --no-such-flag 1
AWS_ACCESS_KEY_ID=x metabench frobnicate --meta x
mpirun -np 2 --hostfile h target/release/metabench sweep \\
    --ops mkdir --bogus
metabench matrix a.toml -- sweep --nope
metabench -v sweep --client-cache=false --verbose
redis-server --port 1 --daemonize yes
```

```console
$ cargo run --release -- ops --conc 4
metabench sweep --this-is-output
```

```text
metabench sweep --not-checked-in-output
```
";
    let path = repo().join("docs/src/example.md");
    let (problems, checked) = unknown_flags(&tree, &[(path, doc.to_owned())]);
    assert_eq!(checked, 7, "{problems:?}");
    assert_eq!(
        problems,
        [
            "docs/src/example.md:5: `--no-such-flag` is not a flag of `metabench sweep`",
            "docs/src/example.md:6: `frobnicate` is not a subcommand of `metabench`",
            "docs/src/example.md:7: `--bogus` is not a flag of `metabench sweep`",
            "docs/src/example.md:9: `--nope` is not a flag of `metabench sweep`",
            "docs/src/example.md:15: `--conc` is not a flag of `metabench ops`",
        ]
    );
}

/// The link check catches a missing file, relative to the linking file, and leaves URLs,
/// anchors and code alone.
#[test]
fn the_link_check_catches_missing_files() {
    let doc = "\
See [the guide](SUMMARY.md), [a chapter](engines.md#redis), [away](https://example.com/x.md),
[here](#top), `[code](nowhere.md)`, ![a picture](img/none.png) and [gone](gone.md \"title\").

```sh
echo [not a link](nowhere.md)
```
";
    let path = repo().join("docs/src/example.md");
    let (broken, checked) = broken_links(&[(path, doc.to_owned())]);
    assert_eq!(checked, 4, "{broken:?}");
    assert_eq!(
        broken,
        [
            "docs/src/example.md:2: link to `img/none.png`: docs/src/img/none.png does not exist",
            "docs/src/example.md:2: link to `gone.md`: docs/src/gone.md does not exist",
        ]
    );
}

#[test]
fn the_readme_reads_in_five_minutes() {
    let readme = read(&repo().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines < README_MAX_LINES,
        "README.md has {lines} lines (fewer than {README_MAX_LINES} wanted): move the detail \
         into a chapter of docs/src/"
    );
}
