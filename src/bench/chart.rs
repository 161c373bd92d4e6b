//! `chart.svg`: tokens and turns per scenario, direct against code.

use super::report::BenchReport;

/// The chart of `report` as an SVG document.
///
/// # Errors
/// The chart could not be drawn.
pub fn chart_svg(report: &BenchReport) -> Result<String, String> {
    Err(format!(
        "chart.svg is not drawn yet ({} scenarios)",
        report.scenarios.len()
    ))
}
