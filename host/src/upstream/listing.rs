//! A list an upstream server pages through (its tools, prompts, resources
//! and resource templates), read within bounds: at most so many items, at
//! most the server's message cap in all, at most [`MAX_PAGES`] pages. Each
//! page is one message and so already within the cap; without these a
//! server could answer page after page, each within it, for ever.
//!
//! What is over a bound is not read, and the list says so ([`Listed::cut`]),
//! naming what was kept: the caller logs it, and for tools shows it with
//! the tools it refused. Not here: the checks on each item (`upstream`).

use std::future::Future;

use rmcp::model::{Cursor, PaginatedRequestParams};
use rmcp::service::ServiceError;
use serde::Serialize;

/// Most pages of one list: a cursor that never ends is a broken server.
pub(super) const MAX_PAGES: usize = 1000;

/// How much of one list may be read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    pub items: usize,
    /// Bytes of every item, encoded, over every page.
    pub bytes: usize,
}

/// A list as far as it was read.
#[derive(Debug)]
pub(super) struct Listed<T> {
    pub items: Vec<T>,
    /// Why the list was not read to its end, if it was not.
    pub cut: Option<String>,
}

/// Read the `what` (`"tools"`) of a server page by page through `page`,
/// which fetches one page from a cursor, within `bounds`.
pub(super) async fn list<T, F, Fut>(
    what: &str,
    bounds: Bounds,
    mut page: F,
) -> Result<Listed<T>, ServiceError>
where
    T: Serialize,
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<Cursor>), ServiceError>>,
{
    let mut items = Vec::new();
    let mut bytes = 0usize;
    let mut cursor = None;
    for pages in 1.. {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let (got, next) = page(params).await?;
        for item in got {
            let size = serde_json::to_vec(&item).map_or(usize::MAX, |b| b.len());
            bytes = bytes.saturating_add(size);
            if items.len() == bounds.items || bytes > bounds.bytes {
                let over = if items.len() == bounds.items {
                    format!("more than {} {what}", bounds.items)
                } else {
                    format!("{what} of more than {} bytes in all", bounds.bytes)
                };
                return Ok(Listed {
                    cut: Some(format!(
                        "it listed {over}: the first {} are served, the rest are not",
                        items.len()
                    )),
                    items,
                });
            }
            items.push(item);
        }
        match next {
            None => return Ok(Listed { items, cut: None }),
            Some(_) if pages == MAX_PAGES => {
                return Ok(Listed {
                    cut: Some(format!(
                        "its {what} go on past {MAX_PAGES} pages: the {} of those are served, the rest are not",
                        items.len()
                    )),
                    items,
                });
            }
            next => cursor = next,
        }
    }
    unreachable!("the loop returns by its last page")
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDE: Bounds = Bounds {
        items: usize::MAX,
        bytes: usize::MAX,
    };

    /// A server whose every page holds `per_page` numbers and names a next
    /// page, for `pages` pages (for ever if `None`).
    async fn listed(bounds: Bounds, per_page: usize, pages: Option<usize>) -> (Listed<u32>, usize) {
        let mut asked = 0;
        let listed = list("numbers", bounds, |params: Option<PaginatedRequestParams>| {
            asked += 1;
            let at: usize = params.and_then(|p| p.cursor).map_or(0, |c| c.parse().unwrap());
            let items = (0..per_page).map(|i| (at * per_page + i) as u32).collect();
            let next = pages.is_none_or(|n| at + 1 < n).then(|| (at + 1).to_string());
            std::future::ready(Ok((items, next)))
        })
        .await
        .unwrap();
        (listed, asked)
    }

    #[tokio::test]
    async fn every_page_is_read_to_the_end_within_the_bounds() {
        let (all, asked) = listed(WIDE, 3, Some(4)).await;
        assert_eq!(all.items, (0..12).collect::<Vec<_>>());
        assert_eq!((all.cut, asked), (None, 4));
    }

    #[tokio::test]
    async fn a_list_that_never_ends_stops_at_the_page_cap_saying_so() {
        let (endless, asked) = listed(WIDE, 0, None).await;
        assert_eq!(asked, MAX_PAGES);
        let cut = endless.cut.unwrap();
        assert!(cut.contains("past 1000 pages"), "{cut}");
    }

    #[tokio::test]
    async fn too_many_items_or_bytes_keep_the_first_and_say_why() {
        let few = Bounds {
            items: 5,
            bytes: usize::MAX,
        };
        let (cut, asked) = listed(few, 3, None).await;
        assert_eq!(cut.items, vec![0, 1, 2, 3, 4]);
        assert_eq!(asked, 2, "no page is asked for past the cap");
        let why = cut.cut.unwrap();
        assert!(
            why.contains("more than 5 numbers: the first 5 are served"),
            "{why}"
        );
        // Each number is one or two digits: 0..=9 take 10 bytes, 10 takes 2.
        let small = Bounds {
            items: usize::MAX,
            bytes: 11,
        };
        let (cut, _) = listed(small, 3, None).await;
        assert_eq!(cut.items, (0..10).collect::<Vec<_>>());
        let why = cut.cut.unwrap();
        assert!(why.contains("numbers of more than 11 bytes in all"), "{why}");
    }
}
