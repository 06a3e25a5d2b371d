//! TPC-W v1.8 facts the tiers and the browser emulator share: the 14 web interactions,
//! their URLs and 90th-percentile response-time limits, the three mixes as customer
//! behaviour model graphs (CBMG), subjects, scaling rules, NURand, DigSyl and the
//! negative-exponential think time and session length.
//!
//! Sources: the TPC Benchmark W specification, version 1.8 (the interactions and their
//! pages, the emulated browser, its mixes and transition tables, clause 4 for scaling), as
//! implemented by the PHARM Java kit (`tpcw/rbe/EBTPCW*Factory.java`,
//! `TPCW_Populate.java`) and OSDL's DBT-1, whose transition tables are used with the two known
//! typos corrected.

use interlab_kernel::Rng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// The 14 web interactions, in the fixed column order of the transition tables
/// (ADMC, ADMR, BESS, BUYC, BUYR, CREG, HOME, NEWP, ORDD, ORDI, PROD, SREQ, SRES, SHOP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Interaction {
    #[serde(rename = "ADMC")]
    AdminConfirm,
    #[serde(rename = "ADMR")]
    AdminRequest,
    #[serde(rename = "BESS")]
    BestSellers,
    #[serde(rename = "BUYC")]
    BuyConfirm,
    #[serde(rename = "BUYR")]
    BuyRequest,
    #[serde(rename = "CREG")]
    CustomerRegistration,
    #[serde(rename = "HOME")]
    Home,
    #[serde(rename = "NEWP")]
    NewProducts,
    #[serde(rename = "ORDD")]
    OrderDisplay,
    #[serde(rename = "ORDI")]
    OrderInquiry,
    #[serde(rename = "PROD")]
    ProductDetail,
    #[serde(rename = "SREQ")]
    SearchRequest,
    #[serde(rename = "SRES")]
    SearchResults,
    #[serde(rename = "SHOP")]
    ShoppingCart,
}

use Interaction::*;

/// Number of interactions.
pub const N_INTERACTIONS: usize = 14;

impl Interaction {
    /// All interactions in table column order.
    pub const ALL: [Interaction; N_INTERACTIONS] = [
        AdminConfirm,
        AdminRequest,
        BestSellers,
        BuyConfirm,
        BuyRequest,
        CustomerRegistration,
        Home,
        NewProducts,
        OrderDisplay,
        OrderInquiry,
        ProductDetail,
        SearchRequest,
        SearchResults,
        ShoppingCart,
    ];

    /// Display order (the spec's order: browse class, then order class).
    pub const SPEC_ORDER: [Interaction; N_INTERACTIONS] = [
        Home,
        NewProducts,
        BestSellers,
        ProductDetail,
        SearchRequest,
        SearchResults,
        ShoppingCart,
        CustomerRegistration,
        BuyRequest,
        BuyConfirm,
        OrderInquiry,
        OrderDisplay,
        AdminRequest,
        AdminConfirm,
    ];

    /// Column index in the transition tables.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Served over SSL/TLS by the spec (TPC-W 1.8: Buy Request, Buy Confirm, Order Inquiry,
    /// Order Display).
    pub fn is_secure(self) -> bool {
        matches!(self, BuyRequest | BuyConfirm | OrderInquiry | OrderDisplay)
    }

    /// Four-letter abbreviation (PHARM RBE).
    pub fn abbr(self) -> &'static str {
        match self {
            AdminConfirm => "ADMC",
            AdminRequest => "ADMR",
            BestSellers => "BESS",
            BuyConfirm => "BUYC",
            BuyRequest => "BUYR",
            CustomerRegistration => "CREG",
            Home => "HOME",
            NewProducts => "NEWP",
            OrderDisplay => "ORDD",
            OrderInquiry => "ORDI",
            ProductDetail => "PROD",
            SearchRequest => "SREQ",
            SearchResults => "SRES",
            ShoppingCart => "SHOP",
        }
    }

    /// Human name.
    pub fn name(self) -> &'static str {
        match self {
            AdminConfirm => "Admin Confirm",
            AdminRequest => "Admin Request",
            BestSellers => "Best Sellers",
            BuyConfirm => "Buy Confirm",
            BuyRequest => "Buy Request",
            CustomerRegistration => "Customer Registration",
            Home => "Home",
            NewProducts => "New Products",
            OrderDisplay => "Order Display",
            OrderInquiry => "Order Inquiry",
            ProductDetail => "Product Detail",
            SearchRequest => "Search Request",
            SearchResults => "Search Results",
            ShoppingCart => "Shopping Cart",
        }
    }

    /// URL path of the interaction's page on the web tier.
    pub fn path(self) -> &'static str {
        match self {
            AdminConfirm => "/tpcw/admin_confirm",
            AdminRequest => "/tpcw/admin_request",
            BestSellers => "/tpcw/best_sellers",
            BuyConfirm => "/tpcw/buy_confirm",
            BuyRequest => "/tpcw/buy_request",
            CustomerRegistration => "/tpcw/customer_registration",
            Home => "/tpcw/home",
            NewProducts => "/tpcw/new_products",
            OrderDisplay => "/tpcw/order_display",
            OrderInquiry => "/tpcw/order_inquiry",
            ProductDetail => "/tpcw/product_detail",
            SearchRequest => "/tpcw/search_request",
            SearchResults => "/tpcw/search_results",
            ShoppingCart => "/tpcw/shopping_cart",
        }
    }

    /// The interaction served at a URL path (`/` is Home).
    pub fn from_path(path: &str) -> Option<Interaction> {
        if path == "/" || path == "/tpcw" || path == "/tpcw/" {
            return Some(Home);
        }
        Interaction::ALL.into_iter().find(|i| i.path() == path)
    }

    /// Parses an abbreviation (case-insensitive).
    pub fn from_abbr(s: &str) -> Option<Interaction> {
        Interaction::ALL.into_iter().find(|i| i.abbr().eq_ignore_ascii_case(s))
    }

    /// TPC-W v1.8 90th-percentile web interaction response time limit (WIRT90).
    pub fn wirt90_limit(self) -> Duration {
        let s = match self {
            AdminConfirm => 20,
            BestSellers | NewProducts | BuyConfirm => 5,
            SearchResults => 10,
            _ => 3,
        };
        Duration::from_secs(s)
    }

    /// Interactions the spec runs over SSL (this implementation serves plain HTTP; the flag
    /// is kept for the model).
    pub fn secure(self) -> bool {
        matches!(self, BuyRequest | BuyConfirm | OrderInquiry | OrderDisplay)
    }

    /// Browse class (Home, New Products, Best Sellers, Product Detail, Search Request/Results).
    pub fn browse_class(self) -> bool {
        matches!(self, Home | NewProducts | BestSellers | ProductDetail | SearchRequest | SearchResults)
    }
}

impl fmt::Display for Interaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.abbr())
    }
}

/// The three TPC-W mixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mix {
    Browsing,
    Shopping,
    Ordering,
}

impl Mix {
    pub const ALL: [Mix; 3] = [Mix::Browsing, Mix::Shopping, Mix::Ordering];

    pub fn name(self) -> &'static str {
        match self {
            Mix::Browsing => "browsing",
            Mix::Shopping => "shopping",
            Mix::Ordering => "ordering",
        }
    }

    /// Parses `browsing`, `shopping` or `ordering`, with an error naming the choices.
    pub fn parse(s: &str) -> Result<Mix, String> {
        match s.to_ascii_lowercase().as_str() {
            "browsing" | "b" => Ok(Mix::Browsing),
            "shopping" | "s" => Ok(Mix::Shopping),
            "ordering" | "o" => Ok(Mix::Ordering),
            _ => Err(format!("unknown mix '{s}': expected browsing, shopping or ordering")),
        }
    }

    /// Name of the throughput metric of this mix.
    pub fn metric(self) -> &'static str {
        match self {
            Mix::Browsing => "WIPSb",
            Mix::Shopping => "WIPS",
            Mix::Ordering => "WIPSo",
        }
    }

    /// The spec's steady-state share of each interaction, percent (TPC-W 1.8's browsing,
    /// shopping and ordering mixes).
    pub fn spec_share_pct(self, i: Interaction) -> f64 {
        let col = match self {
            Mix::Browsing => 0,
            Mix::Shopping => 1,
            Mix::Ordering => 2,
        };
        let row: [f64; 3] = match i {
            Home => [29.00, 16.00, 9.12],
            NewProducts => [11.00, 5.00, 0.46],
            BestSellers => [11.00, 5.00, 0.46],
            ProductDetail => [21.00, 17.00, 12.35],
            SearchRequest => [12.00, 20.00, 14.53],
            SearchResults => [11.00, 17.00, 13.08],
            ShoppingCart => [2.00, 11.60, 13.53],
            CustomerRegistration => [0.82, 3.00, 12.86],
            BuyRequest => [0.75, 2.60, 12.73],
            BuyConfirm => [0.69, 1.20, 10.18],
            OrderInquiry => [0.30, 0.75, 0.25],
            OrderDisplay => [0.25, 0.66, 0.22],
            AdminRequest => [0.10, 0.10, 0.12],
            AdminConfirm => [0.09, 0.09, 0.11],
        };
        row[col]
    }

    /// The mix's CBMG.
    pub fn cbmg(self) -> Cbmg {
        Cbmg::new(match self {
            Mix::Browsing => BROWSING,
            Mix::Shopping => SHOPPING,
            Mix::Ordering => ORDERING,
        })
    }
}

type Table = &'static [(Interaction, &'static [(Interaction, u16)])];

/// Browsing mix, cumulative thresholds out of 9999 (PHARM EBTPCW1Factory, DBT-1 eu.c).
const BROWSING: Table = &[
    (AdminConfirm, &[(Home, 9877), (SearchRequest, 9999)]),
    (AdminRequest, &[(AdminConfirm, 8999), (Home, 9999)]),
    (BestSellers, &[(Home, 4607), (ProductDetail, 5259), (SearchRequest, 9942), (ShoppingCart, 9999)]),
    (BuyConfirm, &[(Home, 342), (SearchRequest, 9999)]),
    (BuyRequest, &[(BuyConfirm, 9199), (Home, 9595), (ShoppingCart, 9999)]),
    (CustomerRegistration, &[(BuyRequest, 9145), (Home, 9619), (SearchRequest, 9999)]),
    (Home, &[(BestSellers, 3792), (NewProducts, 7585), (OrderInquiry, 7688), (SearchRequest, 9559), (ShoppingCart, 9999)]),
    (NewProducts, &[(Home, 299), (ProductDetail, 9867), (SearchRequest, 9941), (ShoppingCart, 9999)]),
    (OrderDisplay, &[(Home, 802), (SearchRequest, 9999)]),
    (OrderInquiry, &[(Home, 523), (OrderDisplay, 8856), (SearchRequest, 9999)]),
    (ProductDetail, &[(AdminRequest, 47), (Home, 8346), (ProductDetail, 9749), (SearchRequest, 9890), (ShoppingCart, 9999)]),
    (SearchRequest, &[(Home, 788), (SearchResults, 9955), (ShoppingCart, 9999)]),
    (SearchResults, &[(Home, 3674), (ProductDetail, 9868), (SearchRequest, 9942), (ShoppingCart, 9999)]),
    (ShoppingCart, &[(CustomerRegistration, 4099), (Home, 8883), (ShoppingCart, 9999)]),
];

/// Shopping mix (EBTPCW2Factory with SHOP->HOME 9552, eu.c, Bench4Q Mix.java).
const SHOPPING: Table = &[
    (AdminConfirm, &[(Home, 9952), (SearchRequest, 9999)]),
    (AdminRequest, &[(AdminConfirm, 8999), (Home, 9999)]),
    (BestSellers, &[(Home, 167), (ProductDetail, 472), (SearchRequest, 9927), (ShoppingCart, 9999)]),
    (BuyConfirm, &[(Home, 84), (SearchRequest, 9999)]),
    (BuyRequest, &[(BuyConfirm, 4614), (Home, 6546), (ShoppingCart, 9999)]),
    (CustomerRegistration, &[(BuyRequest, 8666), (Home, 8760), (SearchRequest, 9999)]),
    (Home, &[(BestSellers, 3124), (NewProducts, 6249), (OrderInquiry, 6718), (SearchRequest, 7026), (ShoppingCart, 9999)]),
    (NewProducts, &[(Home, 156), (ProductDetail, 9735), (SearchRequest, 9784), (ShoppingCart, 9999)]),
    (OrderDisplay, &[(Home, 69), (SearchRequest, 9999)]),
    (OrderInquiry, &[(Home, 72), (OrderDisplay, 8872), (SearchRequest, 9999)]),
    (ProductDetail, &[(AdminRequest, 58), (Home, 832), (ProductDetail, 1288), (SearchRequest, 8603), (ShoppingCart, 9999)]),
    (SearchRequest, &[(Home, 635), (SearchResults, 9135), (ShoppingCart, 9999)]),
    (SearchResults, &[(Home, 2657), (ProductDetail, 9294), (SearchRequest, 9304), (ShoppingCart, 9999)]),
    (ShoppingCart, &[(CustomerRegistration, 2585), (Home, 9552), (ShoppingCart, 9999)]),
];

/// Ordering mix (EBTPCW3Factory, eu.c with PROD->SREQ 6341).
const ORDERING: Table = &[
    (AdminConfirm, &[(Home, 8348), (SearchRequest, 9999)]),
    (AdminRequest, &[(AdminConfirm, 8999), (Home, 9999)]),
    (BestSellers, &[(Home, 1), (ProductDetail, 333), (SearchRequest, 9998), (ShoppingCart, 9999)]),
    (BuyConfirm, &[(Home, 2), (SearchRequest, 9999)]),
    (BuyRequest, &[(BuyConfirm, 7999), (Home, 9453), (ShoppingCart, 9999)]),
    (CustomerRegistration, &[(BuyRequest, 9899), (Home, 9901), (SearchRequest, 9999)]),
    (Home, &[(BestSellers, 499), (NewProducts, 999), (OrderInquiry, 1269), (SearchRequest, 1295), (ShoppingCart, 9999)]),
    (NewProducts, &[(Home, 504), (ProductDetail, 9942), (SearchRequest, 9976), (ShoppingCart, 9999)]),
    (OrderDisplay, &[(Home, 9939), (SearchRequest, 9999)]),
    (OrderInquiry, &[(Home, 1168), (OrderDisplay, 9968), (SearchRequest, 9999)]),
    (ProductDetail, &[(AdminRequest, 99), (Home, 3750), (ProductDetail, 5621), (SearchRequest, 6341), (ShoppingCart, 9999)]),
    (SearchRequest, &[(Home, 815), (SearchResults, 9815), (ShoppingCart, 9999)]),
    (SearchResults, &[(Home, 486), (ProductDetail, 7817), (SearchRequest, 9998), (ShoppingCart, 9999)]),
    (ShoppingCart, &[(CustomerRegistration, 9499), (Home, 9918), (ShoppingCart, 9999)]),
];

/// Denominator of the cumulative thresholds.
pub const CBMG_SCALE: u16 = 9999;

/// A customer behaviour model graph: for each source interaction, cumulative thresholds
/// (out of 9999) over the target columns in table order.
#[derive(Debug, Clone)]
pub struct Cbmg {
    cum: [[u16; N_INTERACTIONS]; N_INTERACTIONS],
}

impl Cbmg {
    fn new(table: Table) -> Cbmg {
        let mut cum = [[0u16; N_INTERACTIONS]; N_INTERACTIONS];
        for (src, targets) in table {
            let row = &mut cum[src.index()];
            let mut last = 0u16;
            let mut ti = 0usize;
            for (col, cell) in row.iter_mut().enumerate() {
                if ti < targets.len() && targets[ti].0.index() == col {
                    last = targets[ti].1;
                    ti += 1;
                }
                *cell = last;
            }
        }
        Cbmg { cum }
    }

    /// Transition probability from `from` to `to`.
    pub fn probability(&self, from: Interaction, to: Interaction) -> f64 {
        let row = &self.cum[from.index()];
        let c = to.index();
        let prev = if c == 0 { 0 } else { row[c - 1] };
        (row[c] - prev) as f64 / CBMG_SCALE as f64
    }

    /// The cumulative row of a source (non-decreasing, last entry 9999 when valid).
    pub fn row(&self, from: Interaction) -> &[u16; N_INTERACTIONS] {
        &self.cum[from.index()]
    }

    /// Next interaction: r uniform in [1, 9999], first column whose cumulative value >= r
    /// (TPC-W clause 5.2.2.4 as PHARM and DBT-1 implement it).
    pub fn next(&self, from: Interaction, rng: &mut Rng) -> Interaction {
        let r = 1 + rng.below(CBMG_SCALE as u64) as u16;
        let row = &self.cum[from.index()];
        for (col, &c) in row.iter().enumerate() {
            if c >= r {
                return Interaction::ALL[col];
            }
        }
        Home
    }

    /// Stationary distribution (power iteration), fractions summing to 1, by column index.
    pub fn stationary(&self) -> [f64; N_INTERACTIONS] {
        let mut p = [1.0 / N_INTERACTIONS as f64; N_INTERACTIONS];
        for _ in 0..5000 {
            let mut q = [0.0; N_INTERACTIONS];
            for from in Interaction::ALL {
                for to in Interaction::ALL {
                    q[to.index()] += p[from.index()] * self.probability(from, to);
                }
            }
            p = q;
        }
        p
    }
}

/// The 24 subjects.
pub const SUBJECTS: [&str; 24] = [
    "ARTS",
    "BIOGRAPHIES",
    "BUSINESS",
    "CHILDREN",
    "COMPUTERS",
    "COOKING",
    "HEALTH",
    "HISTORY",
    "HOME",
    "HUMOR",
    "LITERATURE",
    "MYSTERY",
    "NON-FICTION",
    "PARENTING",
    "POLITICS",
    "REFERENCE",
    "RELIGION",
    "ROMANCE",
    "SELF-HELP",
    "SCIENCE-NATURE",
    "SCIENCE-FICTION",
    "SPORTS",
    "YOUTH",
    "TRAVEL",
];

/// Credit card types.
pub const CC_TYPES: [&str; 5] = ["VISA", "MASTERCARD", "DISCOVER", "AMEX", "DINERS"];
/// Shipping types.
pub const SHIP_TYPES: [&str; 6] = ["AIR", "UPS", "FEDEX", "SHIP", "COURIER", "MAIL"];
/// Book bindings.
pub const BACKINGS: [&str; 5] = ["HARDBACK", "PAPERBACK", "USED", "AUDIO", "LIMITED-EDITION"];
/// Order statuses.
pub const ORDER_STATUS: [&str; 4] = ["PROCESSING", "SHIPPED", "PENDING", "DENIED"];

/// Population sizes by the TPC-W scaling rules (TPC-W 1.8 clause 4; PHARM `TPCW_Populate.java`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scale {
    /// NUM_ITEMS.
    pub items: u64,
    /// Emulated browsers the database is scaled for (NUM_EBS).
    pub ebs: u64,
}

impl Scale {
    /// Checks the item count against the spec's choices (1K, 10K, 100K, 1M, 10M).
    pub fn new(items: u64, ebs: u64) -> Result<Scale, String> {
        if ![1_000, 10_000, 100_000, 1_000_000, 10_000_000].contains(&items) {
            return Err(format!("--items {items}: TPC-W allows 1000, 10000, 100000, 1000000 or 10000000"));
        }
        if ebs == 0 || ebs > 100_000 {
            return Err(format!("--ebs {ebs}: expected 1 to 100000 emulated browsers"));
        }
        Ok(Scale { items, ebs })
    }
    /// CUSTOMER rows: 2880 x NUM_EBS.
    pub fn customers(&self) -> u64 {
        2880 * self.ebs
    }
    /// ADDRESS rows: 2 x CUSTOMER.
    pub fn addresses(&self) -> u64 {
        2 * self.customers()
    }
    /// AUTHOR rows: 0.25 x NUM_ITEMS.
    pub fn authors(&self) -> u64 {
        self.items / 4
    }
    /// ORDERS rows: 0.9 x CUSTOMER.
    pub fn orders(&self) -> u64 {
        self.customers() * 9 / 10
    }
    /// COUNTRY rows.
    pub fn countries(&self) -> u64 {
        92
    }
}

/// NURand(A, x, y) = (((rand[0,A] | rand[x,y])) mod (y-x+1)) + x.
pub fn nurand(rng: &mut Rng, a: u64, x: u64, y: u64) -> u64 {
    let r1 = rng.below(a + 1);
    let r2 = x + rng.below(y - x + 1);
    ((r1 | r2) % (y - x + 1)) + x
}

/// NURand constant A for customer ids, by NUM_CUSTOMERS.
pub fn nurand_a_customers(customers: u64) -> u64 {
    match customers {
        0..=9_999 => 1023,
        10_000..=39_999 => 4095,
        40_000..=159_999 => 16383,
        160_000..=639_999 => 65535,
        640_000..=2_559_999 => 262143,
        2_560_000..=10_239_999 => 1048575,
        10_240_000..=40_959_999 => 4194303,
        40_960_000..=163_839_999 => 16777215,
        _ => 67108863,
    }
}

/// NURand constant A for search strings, by NUM_ITEMS.
pub fn nurand_a_items(items: u64) -> u64 {
    match items {
        0..=1_000 => 63,
        1_001..=10_000 => 511,
        10_001..=100_000 => 4095,
        100_001..=1_000_000 => 32767,
        _ => 524287,
    }
}

const SYLLABLES: [&str; 10] = ["BA", "OG", "AL", "RI", "RE", "SE", "AT", "UL", "IN", "NG"];

/// DigSyl(d, n): the decimal digits of `d` (left-padded with zeros to `n` digits) mapped
/// to the syllables BA OG AL RI RE SE AT UL IN NG.
pub fn digsyl(d: u64, n: usize) -> String {
    let digits = format!("{d:0n$}");
    digits.bytes().map(|b| SYLLABLES[(b - b'0') as usize]).collect()
}

/// DigSyl with only the first letter upper-case ("OGAL" -> "Ogal"): the form used in
/// titles and author names, and in the search strings that must find them.
pub fn digsyl_word(d: u64) -> String {
    let s = digsyl(d, 0);
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.chars().enumerate() {
        out.push(if i == 0 { c } else { c.to_ascii_lowercase() });
    }
    out
}

/// A customer's user name: DigSyl(C_ID) (PHARM); the password is its lower-case form.
pub fn customer_uname(c_id: u64) -> String {
    digsyl(c_id, 0)
}

/// Think time mean (clause 5.3.1.1).
pub const THINK_MEAN: Duration = Duration::from_secs(7);
/// User session minimum duration mean (clause 6.2.1.2).
pub const USMD_MEAN: Duration = Duration::from_secs(15 * 60);

/// Negative-exponential think time with mean `mean`: -ln(r) x mean, r uniform in (0, 1],
/// truncated at 10 x mean.
pub fn think_time(rng: &mut Rng, mean: Duration) -> Duration {
    let r = 1.0 - rng.next_f64(); // (0, 1]
    let x = (-r.ln()).min(10.0);
    mean.mul_f64(x)
}

/// User session minimum duration: -ln(r) x mean, truncated at 4 x mean (60 min for the
/// spec's 15 min mean).
pub fn usmd(rng: &mut Rng, mean: Duration) -> Duration {
    let r = 1.0 - rng.next_f64();
    let x = (-r.ln()).min(4.0);
    mean.mul_f64(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_of_every_mix_sums_to_one() {
        for mix in Mix::ALL {
            let g = mix.cbmg();
            for from in Interaction::ALL {
                let row = g.row(from);
                assert!(row.windows(2).all(|w| w[0] <= w[1]), "{mix:?} {from} not monotone");
                assert_eq!(row[N_INTERACTIONS - 1], CBMG_SCALE, "{mix:?} {from}");
                let sum: f64 = Interaction::ALL.iter().map(|&to| g.probability(from, to)).sum();
                assert!((sum - 1.0).abs() < 1e-12, "{mix:?} {from}: {sum}");
            }
        }
    }

    #[test]
    fn stationary_distributions_are_the_spec_mixes() {
        for mix in Mix::ALL {
            let p = mix.cbmg().stationary();
            let spec_total: f64 = Interaction::ALL.iter().map(|&i| mix.spec_share_pct(i)).sum();
            assert!((spec_total - 100.0).abs() < 0.02, "{mix:?} spec sums to {spec_total}");
            for i in Interaction::ALL {
                let got = p[i.index()] * 100.0;
                let want = mix.spec_share_pct(i);
                assert!((got - want).abs() < 0.02, "{mix:?} {i}: stationary {got:.3}% vs spec {want}%");
            }
        }
    }

    #[test]
    fn sampled_transitions_follow_the_table() {
        let g = Mix::Shopping.cbmg();
        let mut rng = Rng::new(1);
        let n = 200_000;
        let mut count = [0u32; N_INTERACTIONS];
        for _ in 0..n {
            count[g.next(ShoppingCart, &mut rng).index()] += 1;
        }
        let creg = count[CustomerRegistration.index()] as f64 / n as f64;
        assert!((creg - 0.2585).abs() < 0.005, "{creg}");
        assert_eq!(count[Home.index()] + count[CustomerRegistration.index()] + count[ShoppingCart.index()], n);
    }

    #[test]
    fn paths_and_abbreviations_round_trip() {
        for i in Interaction::ALL {
            assert_eq!(Interaction::from_path(i.path()), Some(i));
            assert_eq!(Interaction::from_abbr(i.abbr()), Some(i));
            assert_eq!(serde_json::to_string(&i).unwrap(), format!("\"{}\"", i.abbr()));
        }
        assert_eq!(Interaction::from_path("/"), Some(Home));
        assert_eq!(Interaction::from_path("/nope"), None);
    }

    #[test]
    fn digsyl_and_nurand() {
        assert_eq!(digsyl(1234, 0), "OGALRIRE");
        assert_eq!(digsyl(12, 4), "BABAOGAL");
        assert_eq!(digsyl_word(12), "Ogal");
        let mut rng = Rng::new(3);
        for _ in 0..10_000 {
            let v = nurand(&mut rng, 1023, 1, 2880);
            assert!((1..=2880).contains(&v));
        }
        assert_eq!(nurand_a_customers(2880), 1023);
        assert_eq!(nurand_a_customers(144_000), 16383);
        assert_eq!(nurand_a_items(1000), 63);
        assert_eq!(nurand_a_items(100_000), 4095);
    }

    #[test]
    fn think_time_mean_and_truncation() {
        let mut rng = Rng::new(9);
        let n = 200_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let t = think_time(&mut rng, THINK_MEAN).as_secs_f64();
            assert!(t <= 70.0 + 1e-9);
            sum += t;
        }
        let mean = sum / n as f64;
        assert!((mean - 7.0).abs() < 0.08, "{mean}");
        let u = usmd(&mut rng, USMD_MEAN);
        assert!(u <= USMD_MEAN * 4);
    }

    #[test]
    fn scaling_rules() {
        let s = Scale::new(10_000, 100).unwrap();
        assert_eq!(s.customers(), 288_000);
        assert_eq!(s.addresses(), 576_000);
        assert_eq!(s.authors(), 2_500);
        assert_eq!(s.orders(), 259_200);
        assert!(Scale::new(1234, 1).is_err());
        assert!(Scale::new(1000, 0).is_err());
        assert_eq!(Mix::parse("Shopping"), Ok(Mix::Shopping));
        assert!(Mix::parse("x").unwrap_err().contains("browsing, shopping or ordering"));
    }
}
