//! `soak-resources --plot FILE.svg`: the soak's samples as a picture (plotters' SVG backend):
//! each client's resident memory, and the server's `used_memory`, over the run, with the
//! faults marked.
//!
//! plotters is built without system libraries: its text is laid out with a TrueType font read
//! at run time (as `relock-bench --plot` does).

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

/// Where common systems keep a sans-serif TrueType font; `RELOCK_PLOT_FONT` names another.
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
];

fn font() -> Result<(), String> {
    let candidates: Vec<std::path::PathBuf> = match std::env::var_os("RELOCK_PLOT_FONT") {
        Some(p) => vec![p.into()],
        None => FONT_PATHS.iter().map(Into::into).collect(),
    };
    for path in &candidates {
        if let Ok(bytes) = std::fs::read(path) {
            // plotters keeps a registered font for the life of the process, as `&'static`.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return Ok(());
            }
        }
    }
    Err("no TrueType font found for the plot's text (Debian: apt-get install fonts-dejavu-core, or set RELOCK_PLOT_FONT to a .ttf file)".into())
}

/// One series to draw: its label and its (seconds, value) points.
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// Writes two panels to `path` (SVG): `clients` (MB) above, `server` (MB) below; `faults`
/// (seconds) as vertical marks on both.
pub fn write(path: &Path, clients: &[Line], server: &[Line], faults: &[f64]) -> Result<(), String> {
    font()?;
    let root = SVGBackend::new(path, (1200, 800)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (top, bottom) = root.split_vertically(400);
    panel(&top, "each client's resident memory (MB)", clients, faults)?;
    panel(&bottom, "server used_memory (MB)", server, faults)?;
    root.present().map_err(|e| e.to_string())
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    lines: &[Line],
    faults: &[f64],
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let all = lines.iter().flat_map(|l| l.points.iter());
    let (x_max, mut y_min, mut y_max) = all.fold((1.0f64, f64::MAX, f64::MIN), |(x, lo, hi), p| {
        (x.max(p.0), lo.min(p.1), hi.max(p.1))
    });
    if y_min > y_max {
        (y_min, y_max) = (0.0, 1.0);
    }
    let pad = ((y_max - y_min) * 0.1).max(0.5);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max, (y_min - pad).max(0.0)..y_max + pad)
        .map_err(e)?;
    chart.configure_mesh().x_desc("seconds").draw().map_err(e)?;
    for f in faults {
        chart
            .draw_series(LineSeries::new(
                [(*f, (y_min - pad).max(0.0)), (*f, y_max + pad)],
                RGBColor(200, 200, 200),
            ))
            .map_err(e)?;
    }
    for (i, l) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                l.points.iter().copied(),
                color.stroke_width(1),
            ))
            .map_err(e)?
            .label(l.label.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 15, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 11))
        .draw()
        .map_err(e)?;
    Ok(())
}
