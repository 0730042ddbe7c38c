//! Charts as SVG text, drawn with plotters' SVG backend: `wmfix tune`'s plots (files of their
//! own) and `wmfix report`'s (inline in the page). A leaf: the colours and fonts they share, and
//! the one way to turn a drawing into a string.

use plotters::coord::Shift;
use plotters::prelude::*;

/// The drawing area a chart is drawn on.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// matplotlib's first colours, in order: blue, orange, green, red.
pub const BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
pub const ORANGE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
pub const GREEN: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
pub const RED: RGBColor = RGBColor(0xd6, 0x27, 0x28);
pub const GREY: RGBColor = RGBColor(0x9e, 0x9e, 0x9e);
pub const LIGHT_GREY: RGBColor = RGBColor(0xe0, 0xe0, 0xe0);
pub const DARK_GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// The colours of a series of lines, one each (the tests MP, LB, SB; the cost metrics).
pub const SERIES: [RGBColor; 3] = [BLUE, ORANGE, GREEN];

/// The font family of every chart's text.
pub const FONT: &str = "sans-serif";

/// `c` as SVG writes it (`#1F77B4`), for tests that look for a colour.
pub fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// A text style of `size` pixels.
pub fn text(size: u32) -> TextStyle<'static> {
    (FONT, size).into_font().color(&BLACK)
}

/// An error of the drawing: plotters' error types borrow the backend, so only the message is
/// kept. Drawing into a string fails only by a bug of the chart (exit 70).
pub fn drawing_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart: {e}")
}

/// The SVG text of a `width` x `height` chart on white that `draw` draws.
pub fn svg(
    (width, height): (u32, u32),
    draw: impl FnOnce(&Area) -> anyhow::Result<()>,
) -> anyhow::Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing_error)?;
        draw(&root)?;
        root.present().map_err(drawing_error)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_is_one_svg_element_with_its_size_and_drawing() {
        let svg = svg((120, 40), |a| {
            a.draw(&Rectangle::new([(10, 10), (30, 20)], BLUE.filled()))
                .map_err(drawing_error)?;
            a.draw(&Text::new("a < b", (40, 10), text(12)))
                .map_err(drawing_error)?;
            Ok(())
        })
        .unwrap();
        assert!(svg.starts_with("<svg width=\"120\" height=\"40\""), "{svg}");
        assert!(svg.ends_with("</svg>\n"), "{svg}");
        assert!(svg.contains(&format!("fill=\"{}\"", hex(BLUE))), "{svg}");
        assert!(svg.contains("a &lt; b"), "text is escaped: {svg}");
        assert!(svg.contains("font-family=\"sans-serif\""), "{svg}");
    }

    #[test]
    fn an_error_of_the_drawing_is_returned_not_a_panic() {
        let e = svg((10, 10), |_| Err(drawing_error("no room"))).unwrap_err();
        assert!(e.to_string().contains("no room"), "{e}");
    }
}
