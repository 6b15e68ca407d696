//! `--plot FILE`: benchmark results as a picture, on `plotters`. The format follows the
//! extension: `.svg` (SVG backend) or `.png` (bitmap backend).
//!
//! plotters is built without system libraries (no fontconfig, no freetype): text is laid out
//! with `ab_glyph` and a TrueType font read at run time, which both formats need (SVG for the
//! size of its labels, PNG to draw them too).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::shared::CliError;
use crate::stats::{as_ms, Latencies};

/// A font file to use instead of the system ones searched.
const FONT_ENV: &str = "RELOCK_PLOT_FONT";

/// Where common systems keep a sans-serif TrueType font, searched in this order.
const FONT_PATHS: &[&str] = &[
    // Debian, Ubuntu (fonts-dejavu-core)
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    // Fedora, RHEL
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    // Arch
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    // Alpine
    "/usr/share/fonts/ttf-dejavu/DejaVuSans.ttf",
    // Liberation and Noto, on the same systems
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/noto/NotoSans-Regular.ttf",
    // macOS
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Svg,
    Png,
}

/// The file `--plot` writes, in the format its extension names.
#[derive(Debug, Clone)]
pub(crate) struct PlotFile {
    path: PathBuf,
    format: Format,
}

impl PlotFile {
    /// The clap value parser: refuses any extension but `.svg` and `.png`, and a folder that
    /// does not exist, before the benchmark runs.
    pub(crate) fn from_arg(arg: &str) -> Result<PlotFile, String> {
        let path = PathBuf::from(arg);
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let format = match ext.as_deref() {
            Some("svg") => Format::Svg,
            Some("png") => Format::Png,
            _ => {
                return Err(format!(
                "{arg}: the plot format follows the file's extension, which must be .svg or .png"
            ))
            }
        };
        crate::report::check_folder(&path)?;
        Ok(PlotFile { path, format })
    }

    /// Readies everything drawing needs (the font) so that a missing one is told before the
    /// benchmark runs rather than after.
    pub(crate) fn prepare(&self) -> Result<(), CliError> {
        font().map_err(|e| CliError::Failed(format!("--plot {}: {e}", self.path.display())))
    }

    fn render<C: Chart>(&self, size: (u32, u32), chart: &C) -> Result<(), CliError> {
        self.prepare()?;
        let fail = |e: String| CliError::Failed(format!("writing {}: {e}", self.path.display()));
        match self.format {
            Format::Svg => {
                let root = SVGBackend::new(&self.path, size).into_drawing_area();
                chart.draw(&root).map_err(fail)?;
                root.present().map_err(|e| fail(e.to_string()))
            }
            Format::Png => {
                let root = BitMapBackend::new(&self.path, size).into_drawing_area();
                chart.draw(&root).map_err(fail)?;
                root.present().map_err(|e| fail(e.to_string()))
            }
        }
    }
}

/// Loads and registers the font once per process; the error says what to do.
fn font() -> Result<(), String> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let candidates: Vec<PathBuf> = match std::env::var_os(FONT_ENV) {
            Some(p) => vec![PathBuf::from(p)],
            None => FONT_PATHS.iter().map(PathBuf::from).collect(),
        };
        for path in &candidates {
            if register(path) {
                return Ok(());
            }
        }
        let looked = candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        Err(format!(
            "no TrueType font found to lay out the plot's text (looked for {looked}); install \
             one (Debian: apt-get install fonts-dejavu-core) or set {FONT_ENV} to a .ttf file"
        ))
    })
    .clone()
}

/// Registers the font at `path` as plotters' "sans-serif"; false if it cannot be read or parsed.
fn register(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    // plotters keeps registered fonts for the life of the process and takes them as
    // `&'static`: one font, leaked once (the OnceLock above), is that life.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
}

/// A picture drawn the same way on either backend.
trait Chart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// A chart's legend at `position`, boxed, over a light background.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// `relock-bench lock`: the handoff latency histograms of the contended cases, and pairs/s per lock
/// kind.
pub(crate) struct BenchPlot<'a> {
    /// (lock kind, its handoff latencies).
    pub(crate) handoffs: Vec<(&'static str, &'a Latencies)>,
    /// (case, pairs/s), drawn as bars on a log scale.
    pub(crate) rates: Vec<(String, f64)>,
}

impl BenchPlot<'_> {
    pub(crate) fn write(&self, file: &PlotFile) -> Result<(), CliError> {
        file.render((1400, 600), self)
    }
}

/// Histogram bins up to the highest p99.9 of all series; the last bin also holds the tail.
const BINS: usize = 40;

impl Chart for BenchPlot<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        let (left, right) = root.split_horizontally(700);

        let upper_ms = self
            .handoffs
            .iter()
            .map(|(_, l)| as_ms(l.percentile(99.9)))
            .fold(0.0, f64::max)
            .max(0.01)
            * 1.05;
        let width = upper_ms / BINS as f64;
        let shares: Vec<Vec<f64>> = self
            .handoffs
            .iter()
            .map(|(_, l)| {
                let mut bins = vec![0u64; BINS];
                for (v, n) in l.counts_ms() {
                    bins[((v / width) as usize).min(BINS - 1)] += n;
                }
                let total = l.len().max(1) as f64;
                bins.iter().map(|&n| n as f64 / total).collect()
            })
            .collect();
        let top = shares
            .iter()
            .flatten()
            .copied()
            .fold(0.0, f64::max)
            .max(0.01)
            * 1.1;
        let mut chart = ChartBuilder::on(&left)
            .caption("handoff latency, contended", ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..upper_ms, 0.0..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("handoff latency (ms); the last bin holds the tail beyond p99.9")
            .y_desc("fraction of handoffs")
            .draw()
            .map_err(err)?;
        for (i, ((kind, l), share)) in self.handoffs.iter().zip(&shares).enumerate() {
            let color = Palette99::pick(i).mix(0.45);
            chart
                .draw_series(share.iter().enumerate().map(|(b, &s)| {
                    let x0 = b as f64 * width;
                    Rectangle::new([(x0, 0.0), (x0 + width, s)], color.filled())
                }))
                .map_err(err)?
                .label(format!(
                    "{kind} lock: p50 {:.3} ms, p99 {:.3} ms ({} handoffs)",
                    as_ms(l.percentile(50.0)),
                    as_ms(l.percentile(99.0)),
                    l.len()
                ))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 16, y + 6)], color.filled())
                });
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;

        let n = self.rates.len().max(1);
        let highest = self.rates.iter().map(|r| r.1).fold(1.0, f64::max);
        let names: Vec<String> = self.rates.iter().map(|r| r.0.clone()).collect();
        let label = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        let mut chart = ChartBuilder::on(&right)
            .caption("pairs/s per lock kind", ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            // A discrete range holds its end: 0..n-1 is n bars.
            .build_cartesian_2d(
                (0..n - 1).into_segmented(),
                (1.0..highest * 4.0).log_scale(),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&label)
            .y_label_formatter(&|v| format!("{v:.0}"))
            .y_desc("lock+unlock pairs/s (log scale)")
            .draw()
            .map_err(err)?;
        chart
            .draw_series(self.rates.iter().enumerate().map(|(i, (_, v))| {
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 1.0),
                        (SegmentValue::Exact(i + 1), v.max(1.0)),
                    ],
                    Palette99::pick(i).filled(),
                );
                bar.set_margin(0, 0, 20, 20);
                bar
            }))
            .map_err(err)?;
        let above = TextStyle::from(("sans-serif", 15)).pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series(self.rates.iter().enumerate().map(|(i, (_, v))| {
                Text::new(
                    format!("{v:.0}"),
                    (SegmentValue::CenterOf(i), v.max(1.0) * 1.1),
                    above.clone(),
                )
            }))
            .map_err(err)?;
        Ok(())
    }
}

/// `relock-bench quorum`: the acquire latency distribution of each configuration.
pub(crate) struct QuorumPlot<'a> {
    /// (configuration, its acquire latencies).
    pub(crate) cdfs: Vec<(String, &'a Latencies)>,
    /// (configuration, p50, p99) of a configuration known only by those (the rslock peer).
    pub(crate) points: Vec<(String, Duration, Duration)>,
}

impl QuorumPlot<'_> {
    pub(crate) fn write(&self, file: &PlotFile) -> Result<(), CliError> {
        file.render((1000, 650), self)
    }
}

impl Chart for QuorumPlot<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        let upper_ms = self
            .cdfs
            .iter()
            .map(|(_, l)| as_ms(l.percentile(99.9)))
            .chain(self.points.iter().map(|p| as_ms(p.2)))
            .fold(0.0, f64::max)
            .max(0.01)
            * 1.1;
        let mut chart = ChartBuilder::on(root)
            .caption(
                "acquire latency CDF, serial acquire+release (up to p99.9)",
                ("sans-serif", 22),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..upper_ms, 0.0..1.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("acquire latency (ms)")
            .y_desc("fraction of acquires at most x")
            .draw()
            .map_err(err)?;
        for (i, (name, l)) in self.cdfs.iter().enumerate() {
            let color = Palette99::pick(i).stroke_width(2);
            let cdf = l.cdf_ms();
            let start = cdf.first().map(|&(x, _)| (x, 0.0));
            chart
                .draw_series(LineSeries::new(
                    start
                        .into_iter()
                        .chain(cdf.into_iter().take_while(|&(x, _)| x <= upper_ms)),
                    color,
                ))
                .map_err(err)?
                .label(format!("{name} ({} acquires)", l.len()))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        for (j, (name, p50, p99)) in self.points.iter().enumerate() {
            let color = Palette99::pick(self.cdfs.len() + j).stroke_width(2);
            chart
                .draw_series(
                    [(as_ms(*p50), 0.5), (as_ms(*p99), 0.99)].map(|p| Cross::new(p, 7, color)),
                )
                .map_err(err)?
                .label(format!("{name} (p50 and p99 only)"))
                .legend(move |p| Cross::new(p, 5, color));
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        Ok(())
    }
}

/// `relock-bench scale`: uncontended pairs/s against task count, relock beside the U floor.
pub(crate) struct ScalePlot {
    /// (tasks, relock's pairs/s, the floor's pairs/s), in the order measured.
    pub(crate) points: Vec<(usize, f64, f64)>,
}

impl ScalePlot {
    pub(crate) fn write(&self, file: &PlotFile) -> Result<(), CliError> {
        file.render((1000, 650), self)
    }
}

impl Chart for ScalePlot {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        let mut points = self.points.clone();
        points.sort_by_key(|p| p.0);
        let most_tasks = points.iter().map(|p| p.0).max().unwrap_or(1).max(2) as f64;
        let highest = points.iter().map(|p| p.1.max(p.2)).fold(1.0, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(root)
            .caption(
                "uncontended lock+unlock pairs/s against task count",
                ("sans-serif", 22),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d((1.0..most_tasks * 1.2).log_scale(), 0.0..highest)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("tasks, each on a key of its own (log scale)")
            .y_desc("pairs/s")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(err)?;
        let names = ["relock", "U floor: bare fred, the same two script calls"];
        for (i, name) in names.into_iter().enumerate() {
            let color = Palette99::pick(i).stroke_width(2);
            let line: Vec<(f64, f64)> = points
                .iter()
                .map(|p| (p.0 as f64, if i == 0 { p.1 } else { p.2 }))
                .collect();
            chart
                .draw_series(LineSeries::new(line.clone(), color))
                .map_err(err)?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart
                .draw_series(line.into_iter().map(|p| Circle::new(p, 4, color.filled())))
                .map_err(err)?;
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_follows_the_extension() {
        assert_eq!(PlotFile::from_arg("a.svg").unwrap().format, Format::Svg);
        assert_eq!(PlotFile::from_arg("A.PNG").unwrap().format, Format::Png);
        let e = PlotFile::from_arg("out.gif").unwrap_err();
        assert!(e.contains("out.gif") && e.contains(".svg or .png"), "{e}");
        assert!(PlotFile::from_arg("noext").is_err());
        assert!(PlotFile::from_arg("/no/such/folder/a.svg").is_err());
    }
}
