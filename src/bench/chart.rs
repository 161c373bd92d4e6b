//! `chart.svg`: tokens and turns per scenario, direct against code.
//!
//! Two stacked panels over the same scenario slots: cumulative input tokens (log scale, since a
//! bench spans a few hundred to a few hundred thousand tokens) and model turns (linear). Each
//! scenario is a slot with one bar per mode it ran in, in one colour per mode throughout; a
//! scenario that could not run is an empty slot that says so.
//!
//! Drawn with plotters' SVG backend and no font backend: plotters then estimates text extents
//! from the character count and the SVG carries the text as `<text>` elements for the viewer to
//! set, so no font file is read, embedded or needed at build time. The output depends only on the
//! report (integer coordinates, no clock, no randomness): the same report gives the same bytes.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::report::{BenchReport, Mode, ModeReport, ScenarioReport};

/// The modes, in the order of their bars in a slot.
const MODES: [Mode; 3] = [Mode::Direct, Mode::Code, Mode::Discovery];

/// Direct mode's colour (Okabe-Ito vermillion: apart from the code modes' blue and green even for
/// colour-blind readers).
const DIRECT: RGBColor = RGBColor(0xD5, 0x5E, 0x00);
/// Code mode's colour (Okabe-Ito blue).
const CODE: RGBColor = RGBColor(0x00, 0x72, 0xB2);
/// Discovery mode's colour (Okabe-Ito bluish green).
const DISCOVERY: RGBColor = RGBColor(0x00, 0x9E, 0x73);
/// Secondary text: notes, values over bars, the slot of a scenario that did not run.
const GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);
/// The grid.
const GRID: RGBColor = RGBColor(0xDD, 0xDD, 0xDD);

const FONT: &str = "sans-serif";
/// The size of the scenario names (plotters writes sizes to the SVG divided by 1.24).
const NAME_SIZE: u32 = 15;
/// Pixel widths per character assumed when deciding whether names fit (a generous sans-serif
/// average: the viewer's font is not known here).
const CHAR_WIDTH: f64 = 0.62;
/// The longest scenario name shown whole; longer ones are cut with an ellipsis.
const MAX_NAME_CHARS: usize = 28;
/// The share of a slot its bars take.
const GROUP_WIDTH: f64 = 0.8;

const TITLE_HEIGHT: u32 = 96;
const PANEL_PLOT_HEIGHT: u32 = 300;
const PANEL_CAPTION_HEIGHT: u32 = 34;
const Y_LABEL_AREA: u32 = 86;
const MARGIN: u32 = 24;

/// What the backend's drawing calls fail with.
type DrawResult<T> = Result<T, DrawingAreaErrorKind<std::io::Error>>;

/// The chart of `report` as an SVG document.
///
/// # Errors
/// The chart could not be drawn.
pub fn chart_svg(report: &BenchReport) -> Result<String, String> {
    let layout = Layout::of(report);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (layout.width, layout.height)).into_drawing_area();
        draw(&root, report, &layout).map_err(|e| format!("cannot draw chart.svg: {e}"))?;
        root.present()
            .map_err(|e| format!("cannot draw chart.svg: {e}"))?;
    }
    Ok(svg)
}

/// Sizes that depend on the report.
struct Layout {
    width: u32,
    height: u32,
    /// Scenario names as shown (cut when long).
    names: Vec<String>,
    /// Whether the names are written vertically (they do not fit across their slots).
    rotated: bool,
    /// The height under each panel's plot for the names.
    x_label_area: u32,
    /// The most bars one slot holds.
    bars_per_slot: usize,
}

impl Layout {
    fn of(report: &BenchReport) -> Layout {
        let n = report.scenarios.len();
        let width = (2 * MARGIN + Y_LABEL_AREA + 60 * n as u32).max(1000);
        let names: Vec<String> = report
            .scenarios
            .iter()
            .map(|s| short_name(&s.name))
            .collect();
        let slot_px = f64::from(width - 2 * MARGIN - Y_LABEL_AREA) / n.max(1) as f64;
        let longest = names.iter().map(|s| s.chars().count()).max().unwrap_or(0);
        let name_px = longest as f64 * f64::from(NAME_SIZE) / 1.24 * CHAR_WIDTH;
        let rotated = name_px > slot_px - 6.0;
        let x_label_area = if rotated {
            (name_px.ceil() as u32 + 16).max(40)
        } else {
            36
        };
        let panel = PANEL_CAPTION_HEIGHT + PANEL_PLOT_HEIGHT + x_label_area + 12;
        let height = if n == 0 {
            TITLE_HEIGHT + 200
        } else {
            TITLE_HEIGHT + 2 * panel + MARGIN
        };
        let bars_per_slot = report
            .scenarios
            .iter()
            .map(|s| MODES.iter().filter(|m| s.mode(**m).is_some()).count())
            .max()
            .unwrap_or(0)
            .max(2);
        Layout {
            width,
            height,
            names,
            rotated,
            x_label_area,
            bars_per_slot,
        }
    }
}

/// `name`, cut to [`MAX_NAME_CHARS`] characters.
fn short_name(name: &str) -> String {
    if name.chars().count() <= MAX_NAME_CHARS {
        return name.to_string();
    }
    let mut short: String = name.chars().take(MAX_NAME_CHARS - 1).collect();
    short.push('…');
    short
}

fn colour(mode: Mode) -> RGBColor {
    match mode {
        Mode::Direct => DIRECT,
        Mode::Code => CODE,
        Mode::Discovery => DISCOVERY,
    }
}

fn text(size: u32, colour: &'static RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font())
        .color(colour)
        .pos(Pos::new(h, v))
}

fn draw(
    root: &DrawingArea<SVGBackend, Shift>,
    report: &BenchReport,
    layout: &Layout,
) -> DrawResult<()> {
    root.fill(&WHITE)?;
    let (header, body) = root.split_vertically(TITLE_HEIGHT);
    draw_header(&header, report, layout)?;
    if report.scenarios.is_empty() {
        body.draw(&Text::new(
            "no scenarios",
            (layout.width as i32 / 2, 80),
            text(22, &GREY, HPos::Center, VPos::Center),
        ))?;
        return Ok(());
    }
    let panel_height = PANEL_CAPTION_HEIGHT + PANEL_PLOT_HEIGHT + layout.x_label_area + 12;
    let (tokens, turns) = body.split_vertically(panel_height);
    draw_tokens(&tokens, report, layout)?;
    draw_turns(&turns, report, layout)?;
    Ok(())
}

/// Title, the report's kind and source of counts, the legend.
fn draw_header(
    area: &DrawingArea<SVGBackend, Shift>,
    report: &BenchReport,
    layout: &Layout,
) -> DrawResult<()> {
    let centre = layout.width as i32 / 2;
    area.draw(&Text::new(
        format!("codemode bench: direct vs code mode ({})", report.kind),
        (centre, 14),
        TextStyle::from((FONT, 26).into_font().style(FontStyle::Bold))
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    let mut subtitle = match &report.model {
        Some(model) => format!("{} run, model {model}", report.kind),
        None => format!(
            "{} run, tokens counted with {}",
            report.kind, report.tokenizer
        ),
    };
    if let Some(saving) = report.code_input_saving() {
        let (amount, way) = if saving >= 0.0 {
            (saving, "fewer")
        } else {
            (-saving, "more")
        };
        subtitle.push_str(&format!(
            "; code mode read {:.0}% {way} input tokens than direct overall",
            amount * 100.0
        ));
    }
    area.draw(&Text::new(
        subtitle,
        (centre, 44),
        text(16, &GREY, HPos::Center, VPos::Top),
    ))?;

    // The legend: direct and code always, discovery when a scenario ran in it.
    let mut entries: Vec<(RGBColor, bool, &str)> =
        vec![(DIRECT, true, "direct"), (CODE, true, "code")];
    if report
        .scenarios
        .iter()
        .any(|s| s.mode(Mode::Discovery).is_some())
    {
        entries.push((DISCOVERY, true, "discovery"));
    }
    if report
        .scenarios
        .iter()
        .flat_map(|s| &s.modes)
        .any(|m| !m.correct)
    {
        entries.push((GREY, false, "hollow: wrong answer"));
    }
    let entry_width = |label: &str| 22 + (label.len() as f64 * 15.0 * CHAR_WIDTH) as i32 + 24;
    let total: i32 = entries.iter().map(|(_, _, label)| entry_width(label)).sum();
    let mut x = centre - total / 2;
    let y = 78;
    for (colour, filled, label) in entries {
        let style = if filled {
            colour.filled()
        } else {
            colour.stroke_width(2)
        };
        area.draw(&Rectangle::new([(x, y - 7), (x + 14, y + 7)], style))?;
        area.draw(&Text::new(
            label,
            (x + 20, y),
            text(15, &BLACK, HPos::Left, VPos::Center),
        ))?;
        x += entry_width(label);
    }
    Ok(())
}

/// The bars of one slot: each mode the scenario ran in, with its x range.
fn bars<'a>(
    scenario: &'a ScenarioReport,
    slot: usize,
    layout: &Layout,
) -> Vec<(f64, f64, &'a ModeReport)> {
    let runs: Vec<&ModeReport> = MODES.iter().filter_map(|m| scenario.mode(*m)).collect();
    let bar = GROUP_WIDTH / layout.bars_per_slot as f64;
    let start = slot as f64 + 0.5 - bar * runs.len() as f64 / 2.0;
    runs.into_iter()
        .enumerate()
        .map(|(i, run)| (start + bar * i as f64, start + bar * (i + 1) as f64, run))
        .collect()
}

fn bar_style(run: &ModeReport) -> ShapeStyle {
    if run.correct {
        colour(run.mode).filled()
    } else {
        colour(run.mode).stroke_width(2)
    }
}

/// Panel 1: cumulative input tokens, log scale.
fn draw_tokens(
    area: &DrawingArea<SVGBackend, Shift>,
    report: &BenchReport,
    layout: &Layout,
) -> DrawResult<()> {
    let values = report
        .scenarios
        .iter()
        .flat_map(|s| &s.modes)
        .map(|m| m.input_tokens);
    let (min, max) = values
        .filter(|v| *v > 0)
        .fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if max == 0 {
        (1.0, 10.0)
    } else {
        // A decade under the smallest bar so it still shows, headroom over the tallest for the
        // saving above it.
        let lo = 10f64.powf((min as f64).log10().floor());
        let hi = (max as f64 * 2.5).max(lo * 10.0);
        (lo.max(1.0), hi)
    };
    let n = report.scenarios.len();
    let mut chart = ChartBuilder::on(area)
        .margin_left(MARGIN)
        .margin_right(MARGIN)
        .margin_bottom(12)
        .caption(
            "Cumulative input tokens per scenario (log scale; above: code mode against direct)",
            (FONT, 19),
        )
        .x_label_area_size(layout.x_label_area)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(0f64..n as f64, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .light_line_style(WHITE.stroke_width(0))
        .bold_line_style(GRID.stroke_width(1))
        .y_desc("input tokens, all turns (log)")
        .y_label_formatter(&|v| tokens(*v))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()?;
    for (slot, scenario) in report.scenarios.iter().enumerate() {
        let slot_bars = bars(scenario, slot, layout);
        chart.draw_series(slot_bars.iter().map(|(x0, x1, run)| {
            let top = (run.input_tokens as f64).max(lo);
            Rectangle::new([(*x0, lo), (*x1, top)], bar_style(run))
        }))?;
        if let (Some(direct), Some(code)) = (scenario.mode(Mode::Direct), scenario.mode(Mode::Code))
            && direct.input_tokens > 0
        {
            let change = code.input_tokens as f64 / direct.input_tokens as f64 - 1.0;
            let tallest = slot_bars
                .iter()
                .map(|(_, _, run)| run.input_tokens as f64)
                .fold(lo, f64::max);
            let (x, y) = local(area, chart.backend_coord(&(slot as f64 + 0.5, tallest)));
            area.draw(&Text::new(
                format!("{:+.0}%", change * 100.0),
                (x, y - 4),
                text(16, &CODE, HPos::Center, VPos::Bottom),
            ))?;
        }
    }
    draw_slots(
        area,
        &chart.backend_coord(&(0.0, lo)),
        &chart.backend_coord(&(n as f64, hi)),
        report,
        layout,
    )
}

/// Panel 2: model turns, linear.
fn draw_turns(
    area: &DrawingArea<SVGBackend, Shift>,
    report: &BenchReport,
    layout: &Layout,
) -> DrawResult<()> {
    let max = report
        .scenarios
        .iter()
        .flat_map(|s| &s.modes)
        .map(|m| m.turns)
        .max()
        .unwrap_or(0);
    // Headroom for the count written over each bar.
    let hi = (max + max / 8 + 1).max(2);
    let n = report.scenarios.len();
    let mut chart = ChartBuilder::on(area)
        .margin_left(MARGIN)
        .margin_right(MARGIN)
        .margin_bottom(12)
        .caption("Model turns per scenario", (FONT, 19))
        .x_label_area_size(layout.x_label_area)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(0f64..n as f64, 0u64..hi)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels((hi as usize + 1).min(11))
        .light_line_style(WHITE.stroke_width(0))
        .bold_line_style(GRID.stroke_width(1))
        .y_desc("model turns")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()?;
    for (slot, scenario) in report.scenarios.iter().enumerate() {
        let slot_bars = bars(scenario, slot, layout);
        chart.draw_series(
            slot_bars
                .iter()
                .map(|(x0, x1, run)| Rectangle::new([(*x0, 0), (*x1, run.turns)], bar_style(run))),
        )?;
        for (x0, x1, run) in &slot_bars {
            let (x, y) = local(area, chart.backend_coord(&((x0 + x1) / 2.0, run.turns)));
            area.draw(&Text::new(
                run.turns.to_string(),
                (x, y - 3),
                text(15, &GREY, HPos::Center, VPos::Bottom),
            ))?;
        }
    }
    draw_slots(
        area,
        &chart.backend_coord(&(0.0, 0)),
        &chart.backend_coord(&(n as f64, hi)),
        report,
        layout,
    )
}

/// The point of `area`'s own coordinates at the drawing's pixel `(x, y)` (what a chart's
/// `backend_coord` gives).
fn local(area: &DrawingArea<SVGBackend, Shift>, (x, y): (i32, i32)) -> (i32, i32) {
    let (bx, by) = area.get_base_pixel();
    (x - bx, y - by)
}

/// The scenario names under a panel's slots, slot separators, and the note in the slot of a
/// scenario that did not run. `origin` and `corner` are the plot's bottom-left and top-right
/// pixels.
fn draw_slots(
    area: &DrawingArea<SVGBackend, Shift>,
    origin: &(i32, i32),
    corner: &(i32, i32),
    report: &BenchReport,
    layout: &Layout,
) -> DrawResult<()> {
    let n = report.scenarios.len() as i32;
    let (left, bottom) = local(area, *origin);
    let (right, top) = local(area, *corner);
    let x_of = |slot2: i32| left + (right - left) * slot2 / (2 * n);
    for (slot, (scenario, name)) in report.scenarios.iter().zip(&layout.names).enumerate() {
        let slot = slot as i32;
        let centre = x_of(2 * slot + 1);
        if slot > 0 {
            let x = x_of(2 * slot);
            area.draw(&PathElement::new(vec![(x, bottom), (x, bottom + 6)], BLACK))?;
        }
        let colour = if scenario.error.is_some() {
            &GREY
        } else {
            &BLACK
        };
        let style = if layout.rotated {
            text(NAME_SIZE, colour, HPos::Right, VPos::Center).transform(FontTransform::Rotate270)
        } else {
            text(NAME_SIZE, colour, HPos::Center, VPos::Top)
        };
        area.draw(&Text::new(name.clone(), (centre, bottom + 8), style))?;
        if scenario.error.is_some() {
            area.draw(&Text::new(
                "did not run",
                (centre, (top + bottom) / 2),
                text(15, &GREY, HPos::Center, VPos::Center).transform(FontTransform::Rotate270),
            ))?;
        }
    }
    Ok(())
}

/// A token count as an axis label: `500`, `2k`, `1.5k`, `200k`, `1.2M`.
fn tokens(value: f64) -> String {
    let (scaled, unit) = if value >= 999_500.0 {
        (value / 1e6, "M")
    } else if value >= 999.5 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    if (scaled - scaled.round()).abs() < 0.05 {
        format!("{:.0}{unit}", scaled)
    } else {
        format!("{:.1}{unit}", scaled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(mode: Mode, turns: u64, input_tokens: u64, correct: bool) -> ModeReport {
        ModeReport {
            mode,
            correct,
            problems: Vec::new(),
            turns,
            tool_calls: turns,
            input_tokens,
            peak_context_tokens: input_tokens / turns.max(1),
            output_tokens: 100 * turns,
            definition_tokens: 400,
            bytes_to_model: 1000,
            bytes_kept_in_sandbox: 0,
            tool_ms: 1.0,
            model_ms: 10.0,
            turn_tokens: Vec::new(),
            live: None,
        }
    }

    fn scenario(name: &str, modes: Vec<ModeReport>, error: Option<&str>) -> ScenarioReport {
        ScenarioReport {
            name: name.to_string(),
            description: format!("what {name} measures"),
            source: format!("scenarios/{name}.toml"),
            error: error.map(str::to_string),
            modes,
        }
    }

    fn sample() -> BenchReport {
        BenchReport::new(
            "replay",
            "o200k_base",
            vec![
                scenario(
                    "fan-out-search",
                    vec![
                        run(Mode::Direct, 12, 184_000, true),
                        run(Mode::Code, 2, 9_800, true),
                        run(Mode::Discovery, 4, 6_200, true),
                    ],
                    None,
                ),
                scenario(
                    "single-lookup",
                    vec![
                        run(Mode::Direct, 2, 620, true),
                        run(Mode::Code, 2, 1_900, true),
                    ],
                    None,
                ),
                scenario(
                    "broken-server & <tools>",
                    Vec::new(),
                    Some("the tools did not start"),
                ),
                scenario(
                    "large-file-summary",
                    vec![
                        run(Mode::Direct, 5, 52_000, true),
                        run(Mode::Code, 3, 7_400, false),
                    ],
                    None,
                ),
            ],
        )
    }

    #[test]
    fn draws_an_svg_with_every_scenario_and_the_legend() {
        let report = sample();
        let svg = chart_svg(&report).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("codemode bench: direct vs code mode (replay)"));
        for name in ["fan-out-search", "single-lookup", "large-file-summary"] {
            assert!(svg.contains(name), "{name} missing");
        }
        // Escaped like any text of the document.
        assert!(svg.contains("broken-server &amp; &lt;tools&gt;"));
        for label in [">\ndirect\n<", ">\ncode\n<", ">\ndiscovery\n<"] {
            assert!(svg.contains(label), "legend {label:?} missing");
        }
        assert!(svg.contains("hollow: wrong answer"));
        assert!(svg.contains("Model turns per scenario"));
        assert!(svg.contains("log"));
        // Both colours, in both panels (legend + bars of each).
        for colour in ["#D55E00", "#0072B2"] {
            assert!(svg.matches(colour).count() >= 3, "{colour}");
        }
        if let Ok(path) = std::env::var("CODEMODE_CHART_SAMPLE") {
            std::fs::write(path, &svg).unwrap();
        }
    }

    #[test]
    fn the_same_report_draws_the_same_bytes() {
        let report = sample();
        assert_eq!(chart_svg(&report).unwrap(), chart_svg(&report).unwrap());
    }

    #[test]
    fn an_empty_report_says_no_scenarios() {
        let svg = chart_svg(&BenchReport::new("live", "o200k_base", Vec::new())).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("no scenarios"));
        assert!(svg.contains("codemode bench: direct vs code mode (live)"));
    }

    #[test]
    fn a_scenario_that_did_not_run_is_an_empty_named_slot() {
        let report = BenchReport::new(
            "replay",
            "o200k_base",
            vec![scenario("unreachable", Vec::new(), Some("spawn failed"))],
        );
        let svg = chart_svg(&report).unwrap();
        assert!(svg.contains("unreachable"));
        assert!(svg.contains("did not run"));
    }

    /// The opening tag of the `<text>` element that writes `content`.
    fn name_element<'a>(svg: &'a str, content: &str) -> &'a str {
        let at = svg.find(&format!(">\n{content}\n<")).expect("name written");
        &svg[svg[..at].rfind("<text").unwrap()..at]
    }

    #[test]
    fn long_names_are_cut_and_written_vertically() {
        let long = "a-scenario-with-a-name-much-longer-than-any-slot";
        // Twenty scenarios, the most a bench is meant to chart.
        let mut scenarios: Vec<ScenarioReport> = (0..19)
            .map(|i| {
                scenario(
                    &format!("scenario-number-{i}"),
                    vec![
                        run(Mode::Direct, 2 + i, 500 + 10_000 * i, true),
                        run(Mode::Code, 1 + i / 4, 400 + 900 * i, true),
                    ],
                    None,
                )
            })
            .collect();
        scenarios.push(scenario(
            long,
            vec![run(Mode::Direct, 1, 0, true), run(Mode::Code, 1, 0, true)],
            None,
        ));
        let report = BenchReport::new("live", "o200k_base", scenarios);
        let svg = chart_svg(&report).unwrap();
        if let Ok(path) = std::env::var("CODEMODE_CHART_SAMPLE_MANY") {
            std::fs::write(path, &svg).unwrap();
        }
        let shown = short_name(long);
        assert!(!svg.contains(long));
        assert!(shown.ends_with('…') && shown.chars().count() == MAX_NAME_CHARS);
        assert!(name_element(&svg, &shown).contains("rotate(270"));
        // A short name in a wide slot is written across.
        let svg = chart_svg(&sample()).unwrap();
        assert!(!name_element(&svg, "single-lookup").contains("rotate("));
    }

    #[test]
    fn token_labels_are_short() {
        assert_eq!(tokens(500.0), "500");
        assert_eq!(tokens(2000.0), "2k");
        assert_eq!(tokens(1500.0), "1.5k");
        assert_eq!(tokens(200_000.0), "200k");
        assert_eq!(tokens(1_200_000.0), "1.2M");
    }
}
