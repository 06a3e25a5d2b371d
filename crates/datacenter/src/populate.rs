//! Deterministic database population by the TPC-W scaling rules (TPC-W 1.8 clause 4; PHARM `TPCW_Populate.java`):
//! ITEM = NUM_ITEMS, AUTHOR = 0.25 x ITEM (the first quarter of items written 1:1 by
//! authors, the rest by random ones), CUSTOMER = 2880 x NUM_EBS, ADDRESS = 2 x CUSTOMER,
//! ORDERS = 0.9 x CUSTOMER with 1..5 lines each and one CC_XACTS row, COUNTRY = 92,
//! carts empty. Same seed and scale, same rows: every table draws from its own seeded
//! stream and dates count back from a fixed reference day, not from the clock.
//!
//! Titles and author last names carry the DigSyl words the browser emulator searches for:
//! item i's title starts with DigSyl(((i - 1) mod (NUM_ITEMS / 5)) + 1), author a's last
//! name is DigSyl(a), so TPC-W's search strings DigSyl(NURand(A, 1, NUM_ITEMS / 5)) and
//! DigSyl(NURand(A, 1, NUM_ITEMS / 10)) find rows by prefix.

use crate::db::{create_indexes, create_schema, transaction, write_meta, Backend, DbKind, Meta, Value, SCHEMA_VERSION};
use crate::tpcw::{customer_uname, digsyl_word, Scale, BACKINGS, CC_TYPES, ORDER_STATUS, SHIP_TYPES, SUBJECTS};
use interlab_kernel::Rng;

/// Reference "today" of a population, Unix seconds (2025-01-01 00:00 UTC).
pub const POP_NOW: i64 = 1_735_689_600;
const DAY: i64 = 86_400;

/// The 92 countries: name, currency, units per US dollar (rounded reference rates).
pub const COUNTRIES: [(&str, &str, f64); 92] = [
    ("United States", "Dollars", 1.0), ("United Kingdom", "Pounds", 0.79), ("Canada", "Dollars", 1.36),
    ("Germany", "Euro", 0.92), ("France", "Euro", 0.92), ("Japan", "Yen", 151.0), ("Netherlands", "Euro", 0.92),
    ("Italy", "Euro", 0.92), ("Switzerland", "Francs", 0.88), ("Australia", "Dollars", 1.52), ("Algeria", "Dinars", 134.5),
    ("Argentina", "Pesos", 870.0), ("Armenia", "Dram", 390.0), ("Austria", "Euro", 0.92), ("Azerbaijan", "Manat", 1.7),
    ("Bahamas", "Dollars", 1.0), ("Bahrain", "Dinar", 0.376), ("Bangladesh", "Taka", 110.0), ("Barbados", "Dollars", 2.0),
    ("Belarus", "Rubles", 3.27), ("Belgium", "Euro", 0.92), ("Bermuda", "Dollars", 1.0), ("Bolivia", "Boliviano", 6.91),
    ("Botswana", "Pula", 13.6), ("Brazil", "Real", 5.0), ("Bulgaria", "Lev", 1.8), ("Cayman Islands", "Dollars", 0.83),
    ("Chad", "Francs", 605.0), ("Chile", "Pesos", 950.0), ("China", "Yuan Renminbi", 7.2), ("Christmas Island", "Dollars", 1.52),
    ("Colombia", "Pesos", 3900.0), ("Croatia", "Euro", 0.92), ("Cuba", "Pesos", 24.0), ("Cyprus", "Euro", 0.92),
    ("Czech Republic", "Koruna", 23.0), ("Denmark", "Kroner", 6.9), ("Dominican Republic", "Pesos", 59.0),
    ("Eastern Caribbean", "Dollars", 2.7), ("Ecuador", "Dollars", 1.0), ("Egypt", "Pounds", 47.0), ("El Salvador", "Dollars", 1.0),
    ("Estonia", "Euro", 0.92), ("Ethiopia", "Birr", 57.0), ("Falkland Islands", "Pounds", 0.79), ("Faroe Islands", "Kroner", 6.9),
    ("Fiji", "Dollars", 2.25), ("Finland", "Euro", 0.92), ("Gabon", "Francs", 605.0), ("Gibraltar", "Pounds", 0.79),
    ("Greece", "Euro", 0.92), ("Guam", "Dollars", 1.0), ("Hong Kong", "Dollars", 7.8), ("Hungary", "Forint", 360.0),
    ("Iceland", "Krona", 138.0), ("India", "Rupees", 83.0), ("Indonesia", "Rupiah", 15900.0), ("Iran", "Rial", 42000.0),
    ("Iraq", "Dinar", 1310.0), ("Ireland", "Euro", 0.92), ("Israel", "Shekels", 3.7), ("Jamaica", "Dollars", 156.0),
    ("Jordan", "Dinar", 0.709), ("Kazakhstan", "Tenge", 450.0), ("Kuwait", "Dinar", 0.308), ("Lebanon", "Pounds", 89500.0),
    ("Luxembourg", "Euro", 0.92), ("Malaysia", "Ringgit", 4.7), ("Mexico", "Pesos", 17.0), ("Mauritius", "Rupees", 46.0),
    ("New Zealand", "Dollars", 1.66), ("Norway", "Kroner", 10.7), ("Pakistan", "Rupees", 278.0), ("Philippines", "Pesos", 57.0),
    ("Poland", "Zloty", 4.0), ("Portugal", "Euro", 0.92), ("Romania", "Leu", 4.6), ("Russia", "Rubles", 92.0),
    ("Saudi Arabia", "Riyal", 3.75), ("Singapore", "Dollars", 1.35), ("Slovakia", "Euro", 0.92), ("South Africa", "Rand", 18.7),
    ("South Korea", "Won", 1350.0), ("Spain", "Euro", 0.92), ("Sudan", "Pounds", 600.0), ("Sweden", "Krona", 10.6),
    ("Taiwan", "Dollars", 32.0), ("Thailand", "Baht", 36.0), ("Trinidad", "Dollars", 6.8), ("Turkey", "Lira", 32.0),
    ("Venezuela", "Bolivar", 36.0), ("Zambia", "Kwacha", 26.0),
];

pub const FIRST_NAMES: [&str; 48] = [
    "Ada", "Alan", "Alice", "Amara", "Anders", "Ari", "Beatrix", "Bruno", "Carmen", "Chen", "Clara", "Daniel", "Dara",
    "Edith", "Elena", "Emil", "Farah", "Felix", "Greta", "Hana", "Hugo", "Ines", "Ivan", "Jonas", "Julia", "Kai", "Kenji",
    "Laila", "Leo", "Lucia", "Malik", "Marta", "Milo", "Nadia", "Nils", "Olga", "Omar", "Paula", "Priya", "Rafael", "Rosa",
    "Sami", "Sofia", "Tomas", "Uma", "Victor", "Wen", "Yara",
];

pub const LAST_NAMES: [&str; 40] = [
    "Abbott", "Baker", "Castillo", "Dubois", "Eriksen", "Fischer", "Garcia", "Hughes", "Ivanova", "Jensen", "Kowalski",
    "Larsen", "Moreau", "Nakamura", "Okafor", "Petrov", "Quinn", "Rossi", "Schmidt", "Tanaka", "Ullman", "Varga", "Walsh",
    "Xu", "Young", "Zimmer", "Alvarez", "Becker", "Costa", "Dahl", "Evans", "Ferreira", "Gupta", "Horvat", "Ibrahim",
    "Jovanovic", "Khan", "Lindqvist", "Murphy", "Novak",
];

const ADJECTIVES: [&str; 32] = [
    "Silent", "Hidden", "Last", "Golden", "Broken", "Secret", "Distant", "Burning", "Quiet", "Endless", "Forgotten",
    "Crimson", "Winter", "Summer", "Wild", "Little", "Iron", "Glass", "Midnight", "Northern", "Lost", "Bright", "Dark",
    "Gentle", "Hollow", "Painted", "Restless", "Sacred", "Shining", "Wandering", "Electric", "Paper",
];

const NOUNS: [&str; 32] = [
    "Garden", "River", "Kingdom", "Letter", "Harbor", "Mountain", "Library", "Voyage", "Orchard", "Lantern", "Compass",
    "Island", "Empire", "Cathedral", "Forest", "Machine", "Question", "Season", "Promise", "Bridge", "Engine", "Atlas",
    "Journey", "Mirror", "Window", "Chronicle", "Theory", "Kitchen", "Guide", "Handbook", "Lighthouse", "Archive",
];

const TOPICS: [&str; 24] = [
    "memory", "exile", "the sea", "friendship", "power", "invention", "faith", "the city", "childhood", "war", "music",
    "the frontier", "science", "a family", "ambition", "the weather", "food", "travel", "money", "the mind", "nature",
    "justice", "time", "home",
];

const SENTENCES: [&str; 12] = [
    "A {a} book about {t}.",
    "Told with {a} wit, it follows {t} across three generations.",
    "This edition adds new notes, maps and illustrations.",
    "Readers will find its pages full of {a} detail and careful research.",
    "An award-winning account of {t} and {t}.",
    "Part history, part adventure, it asks what {t} means today.",
    "The author draws on years of work on {t}.",
    "Practical advice sits beside {a} stories of {t}.",
    "A classic for every shelf.",
    "Its chapters move from {t} to {t} with ease.",
    "Critics called it {a} and unforgettable.",
    "A {a} companion for anyone curious about {t}.",
];

const PUBLISHERS: [&str; 16] = [
    "Harbor Lane Press", "Northwind Books", "Gray Owl Publishing", "Meridian House", "Blue Lantern Editions",
    "Riverside Academic", "Copperfield & Sons", "Atlas Street Press", "Juniper Books", "Old Mill Publishers",
    "Saltmarsh Press", "Quarry Hill Media", "Larkspur Editions", "Stonebridge University Press", "Open Field Books",
    "Redwood Crown",
];

const CITIES: [&str; 24] = [
    "Springfield", "Riverton", "Lakeside", "Fairview", "Georgetown", "Madison", "Clinton", "Franklin", "Ashford",
    "Bristol", "Dover", "Easton", "Kingston", "Lancaster", "Milford", "Newport", "Oakland", "Salem", "Troy", "Winchester",
    "Auburn", "Burlington", "Camden", "Dayton",
];

const STREETS: [&str; 16] = [
    "Maple", "Oak", "Cedar", "Elm", "Pine", "Main", "Church", "High", "Park", "Mill", "River", "Lake", "Hill", "Station",
    "Market", "Bridge",
];

const STATES: [&str; 16] = ["CA", "NY", "TX", "WA", "OR", "MA", "IL", "OH", "GA", "NC", "MI", "PA", "ON", "BC", "NSW", "BY"];

fn pick<'a>(rng: &mut Rng, xs: &[&'a str]) -> &'a str {
    xs[rng.below(xs.len() as u64) as usize]
}

/// Uniform integer in [lo, hi].
fn uni(rng: &mut Rng, lo: i64, hi: i64) -> i64 {
    lo + rng.below((hi - lo + 1) as u64) as i64
}

fn astring(rng: &mut Rng, lo: i64, hi: i64) -> String {
    let n = uni(rng, lo, hi);
    (0..n).map(|_| (b'a' + rng.below(26) as u8) as char).collect()
}

fn nstring(rng: &mut Rng, lo: i64, hi: i64) -> String {
    let n = uni(rng, lo, hi);
    (0..n).map(|_| (b'0' + rng.below(10) as u8) as char).collect()
}

/// Prose of about `lo..=hi` characters from sentence templates.
fn prose(rng: &mut Rng, lo: i64, hi: i64) -> String {
    let n = uni(rng, lo, hi) as usize;
    let mut s = String::with_capacity(n + 80);
    while s.len() < n {
        let mut t = pick(rng, &SENTENCES).to_string();
        while let Some(i) = t.find("{a}") {
            let a = pick(rng, &ADJECTIVES).to_lowercase();
            t.replace_range(i..i + 3, &a);
        }
        while let Some(i) = t.find("{t}") {
            let x = pick(rng, &TOPICS);
            t.replace_range(i..i + 3, x);
        }
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(&t);
    }
    s
}

/// The title of item `i`: DigSyl word first (the search key), then a phrase.
pub fn title(rng: &mut Rng, i: u64, items: u64) -> String {
    let token = digsyl_word(((i - 1) % (items / 5).max(1)) + 1);
    let a = pick(rng, &ADJECTIVES);
    let n = pick(rng, &NOUNS);
    match rng.below(5) {
        0 => format!("{token} and the {a} {n}"),
        1 => format!("{token}: The {a} {n}"),
        2 => format!("{token} of the {a} {n}s"),
        3 => format!("{token}'s {a} {n}"),
        _ => format!("{token} in the {n} of {a} Things"),
    }
}

/// Buffered multi-row INSERTs.
struct Bulk<'a> {
    db: &'a mut dyn Backend,
    head: String,
    ncols: usize,
    per: usize,
    vals: Vec<Value>,
    rows: u64,
}

impl<'a> Bulk<'a> {
    fn new(db: &'a mut dyn Backend, table: &str, cols: &[&str]) -> Bulk<'a> {
        let per = (30_000 / cols.len()).min(400);
        Bulk { db, head: format!("INSERT INTO {table} ({}) VALUES ", cols.join(", ")), ncols: cols.len(), per, vals: Vec::new(), rows: 0 }
    }
    fn row(&mut self, r: Vec<Value>) -> Result<(), String> {
        debug_assert_eq!(r.len(), self.ncols);
        self.vals.extend(r);
        self.rows += 1;
        if self.vals.len() >= self.per * self.ncols {
            self.flush()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), String> {
        if self.vals.is_empty() {
            return Ok(());
        }
        let n = self.vals.len() / self.ncols;
        let one = format!("({})", vec!["?"; self.ncols].join(", "));
        let sql = format!("{}{}", self.head, vec![one; n].join(", "));
        let vals = std::mem::take(&mut self.vals);
        self.db.exec(&sql, &vals)?;
        Ok(())
    }
    fn finish(mut self) -> Result<u64, String> {
        self.flush()?;
        Ok(self.rows)
    }
}

fn r(x: f64) -> Value {
    Value::Real((x * 100.0).round() / 100.0)
}

/// Drops and recreates the schema, then fills it; the `dc_meta` row `complete` is written
/// last, in the same transaction, so a half-populated database is never taken for a full
/// one. `progress` receives one line per table.
pub fn populate(db: &mut dyn Backend, scale: Scale, seed: u64, progress: &mut dyn FnMut(&str)) -> Result<Meta, String> {
    create_schema(db)?;
    let kind = db.kind();
    if kind == DbKind::Sqlite {
        db.batch("PRAGMA synchronous=OFF")?;
    }
    let meta = transaction(db, true, |db| fill(db, scale, seed, progress))?;
    if kind == DbKind::Sqlite {
        db.batch("PRAGMA synchronous=NORMAL")?;
    }
    progress("creating indexes");
    create_indexes(db)?;
    if kind == DbKind::Postgres {
        for (t, c) in [("address", "addr_id"), ("customer", "c_id"), ("orders", "o_id")] {
            db.query(&format!("SELECT setval(pg_get_serial_sequence('{t}', '{c}'), (SELECT MAX({c}) FROM {t}))"), &[])?;
        }
    }
    Ok(meta)
}

fn fill(db: &mut dyn Backend, scale: Scale, seed: u64, progress: &mut dyn FnMut(&str)) -> Result<Meta, String> {
    let items = scale.items;
    let authors = scale.authors().max(1);
    let customers = scale.customers();
    let addresses = scale.addresses();
    let orders = scale.orders();

    progress("country (92 rows)");
    let mut b = Bulk::new(db, "country", &["co_id", "co_name", "co_exchange", "co_currency"]);
    for (i, (n, c, x)) in COUNTRIES.iter().enumerate() {
        b.row(vec![Value::Int(i as i64 + 1), (*n).into(), Value::Real(*x), (*c).into()])?;
    }
    b.finish()?;

    progress(&format!("author ({authors} rows)"));
    let mut rng = Rng::stream(seed, 1);
    let mut b = Bulk::new(db, "author", &["a_id", "a_fname", "a_lname", "a_mname", "a_dob", "a_bio"]);
    for a in 1..=authors {
        let dob = -5_364_662_400 + uni(&mut rng, 0, 190 * 365) * DAY; // 1800-01-01 + up to 190 years
        b.row(vec![
            Value::Int(a as i64),
            pick(&mut rng, &FIRST_NAMES).into(),
            digsyl_word(a).into(),
            format!("{}.", (b'A' + rng.below(26) as u8) as char).into(),
            dob.into(),
            prose(&mut rng, 125, 500).into(),
        ])?;
    }
    b.finish()?;

    progress(&format!("item ({items} rows)"));
    let mut rng = Rng::stream(seed, 2);
    let mut costs = vec![0.0f64; items as usize + 1];
    let cols = [
        "i_id", "i_title", "i_a_id", "i_pub_date", "i_publisher", "i_subject", "i_desc", "i_related1", "i_related2", "i_related3",
        "i_related4", "i_related5", "i_thumbnail", "i_image", "i_srp", "i_cost", "i_avail", "i_stock", "i_isbn", "i_page",
        "i_backing", "i_dimensions",
    ];
    let mut b = Bulk::new(db, "item", &cols);
    let day0_1930 = -1_262_304_000i64;
    for i in 1..=items {
        let t = title(&mut rng, i, items);
        let a_id = if i <= authors { i } else { 1 + rng.below(authors) };
        let pub_date = day0_1930 + uni(&mut rng, 0, (POP_NOW - day0_1930) / DAY - 31) * DAY;
        let mut rel: Vec<u64> = Vec::with_capacity(5);
        while rel.len() < 5 {
            let x = 1 + rng.below(items);
            if !rel.contains(&x) || items < 5 {
                rel.push(x);
            }
        }
        let srp = uni(&mut rng, 100, 99_999) as f64 / 100.0;
        let cost = ((srp - srp * uni(&mut rng, 0, 50) as f64 / 100.0) * 100.0).round() / 100.0;
        costs[i as usize] = cost;
        let dims = format!(
            "{:.2} x {:.2} x {:.2}",
            uni(&mut rng, 500, 1200) as f64 / 100.0,
            uni(&mut rng, 700, 1100) as f64 / 100.0,
            uni(&mut rng, 20, 300) as f64 / 100.0
        );
        let mut row = vec![
            Value::Int(i as i64),
            t.into(),
            Value::Int(a_id as i64),
            pub_date.into(),
            pick(&mut rng, &PUBLISHERS).into(),
            SUBJECTS[rng.below(24) as usize].into(),
            prose(&mut rng, 100, 500).into(),
        ];
        row.extend(rel.iter().map(|&x| Value::Int(x as i64)));
        row.extend([
            format!("/img/thumb/{i}.png").into(),
            format!("/img/item/{i}.png").into(),
            r(srp),
            r(cost),
            (pub_date + uni(&mut rng, 1, 30) * DAY).into(),
            uni(&mut rng, 10, 30).into(),
            format!("978{}", nstring(&mut rng, 10, 10)).into(),
            uni(&mut rng, 20, 9999).into(),
            pick(&mut rng, &BACKINGS).into(),
            dims.into(),
        ]);
        b.row(row)?;
    }
    b.finish()?;

    progress(&format!("address ({addresses} rows)"));
    let mut rng = Rng::stream(seed, 3);
    let mut b = Bulk::new(db, "address", &["addr_id", "addr_street1", "addr_street2", "addr_city", "addr_state", "addr_zip", "addr_co_id"]);
    for a in 1..=addresses {
        let kind = ["St", "Ave", "Rd", "Lane", "Way"][rng.below(5) as usize];
        b.row(vec![
            Value::Int(a as i64),
            format!("{} {} {kind}", uni(&mut rng, 1, 9999), pick(&mut rng, &STREETS)).into(),
            if rng.below(2) == 0 { format!("Apt {}", uni(&mut rng, 1, 999)) } else { format!("Suite {}", uni(&mut rng, 100, 999)) }.into(),
            pick(&mut rng, &CITIES).into(),
            pick(&mut rng, &STATES).into(),
            nstring(&mut rng, 5, 5).into(),
            uni(&mut rng, 1, 92).into(),
        ])?;
    }
    b.finish()?;

    progress(&format!("customer ({customers} rows)"));
    let mut rng = Rng::stream(seed, 4);
    let cols = [
        "c_id", "c_uname", "c_passwd", "c_fname", "c_lname", "c_addr_id", "c_phone", "c_email", "c_since", "c_last_login", "c_login",
        "c_expiration", "c_discount", "c_balance", "c_ytd_pmt", "c_birthdate", "c_data",
    ];
    let mut names: Vec<(String, String)> = Vec::with_capacity(customers as usize + 1);
    names.push((String::new(), String::new()));
    let mut b = Bulk::new(db, "customer", &cols);
    for c in 1..=customers {
        let un = customer_uname(c);
        let since = POP_NOW - uni(&mut rng, 1, 730) * DAY;
        let last = (since + uni(&mut rng, 0, 60) * DAY).min(POP_NOW);
        let f = pick(&mut rng, &FIRST_NAMES).to_string();
        let l = pick(&mut rng, &LAST_NAMES).to_string();
        let born = -2_840_140_800 + uni(&mut rng, 0, 120 * 365) * DAY; // 1880-01-01 + up to 120 years
        b.row(vec![
            Value::Int(c as i64),
            un.clone().into(),
            un.to_lowercase().into(),
            f.clone().into(),
            l.clone().into(),
            uni(&mut rng, 1, addresses as i64).into(),
            nstring(&mut rng, 9, 16).into(),
            format!("{}@{}.com", un.to_lowercase(), astring(&mut rng, 2, 9)).into(),
            since.into(),
            last.into(),
            POP_NOW.into(),
            (POP_NOW + 7200).into(),
            Value::Real(uni(&mut rng, 0, 50) as f64 / 100.0),
            Value::Real(0.0),
            Value::Real(uni(&mut rng, 0, 99_999) as f64 / 100.0),
            born.into(),
            astring(&mut rng, 100, 500).into(),
        ])?;
        names.push((f, l));
    }
    b.finish()?;

    progress(&format!("orders, order_line, cc_xacts ({orders} orders)"));
    let mut rng = Rng::stream(seed, 5);
    let mut orders_rows = Vec::with_capacity(orders as usize);
    let mut lines_rows = Vec::new();
    let mut cc_rows = Vec::with_capacity(orders as usize);
    for o in 1..=orders {
        let c = 1 + rng.below(customers);
        let date = POP_NOW - uni(&mut rng, 1, 60) * DAY - uni(&mut rng, 0, DAY - 1);
        let n = uni(&mut rng, 1, 5);
        let mut sub = 0.0;
        let mut qty = 0;
        for l in 1..=n {
            let i = 1 + rng.below(items);
            let q = uni(&mut rng, 1, 300);
            let d = uni(&mut rng, 0, 30) as f64 / 100.0;
            sub += costs[i as usize] * q as f64 * (1.0 - d);
            qty += q;
            lines_rows.push(vec![Value::Int(l), Value::Int(o as i64), Value::Int(i as i64), q.into(), Value::Real(d), prose(&mut rng, 20, 100).into()]);
        }
        let sub = (sub * 100.0).round() / 100.0;
        let tax = (sub * 0.0825 * 100.0).round() / 100.0;
        let total = sub + tax + 3.0 + qty as f64;
        let ship_date = date + uni(&mut rng, 0, 7) * DAY;
        let bill = uni(&mut rng, 1, addresses as i64);
        orders_rows.push(vec![
            Value::Int(o as i64),
            Value::Int(c as i64),
            date.into(),
            r(sub),
            r(tax),
            r(total),
            pick(&mut rng, &SHIP_TYPES).into(),
            ship_date.into(),
            bill.into(),
            uni(&mut rng, 1, addresses as i64).into(),
            pick(&mut rng, &ORDER_STATUS).into(),
        ]);
        let (f, l) = &names[c as usize];
        cc_rows.push(vec![
            Value::Int(o as i64),
            pick(&mut rng, &CC_TYPES).into(),
            nstring(&mut rng, 16, 16).into(),
            format!("{f} {l}").into(),
            (POP_NOW + uni(&mut rng, 10, 730) * DAY).into(),
            astring(&mut rng, 15, 15).to_uppercase().into(),
            r(total),
            ship_date.into(),
            uni(&mut rng, 1, 92).into(),
        ]);
    }
    let mut b = Bulk::new(
        db,
        "orders",
        &["o_id", "o_c_id", "o_date", "o_sub_total", "o_tax", "o_total", "o_ship_type", "o_ship_date", "o_bill_addr_id", "o_ship_addr_id", "o_status"],
    );
    for row in orders_rows {
        b.row(row)?;
    }
    b.finish()?;
    let mut b = Bulk::new(db, "order_line", &["ol_id", "ol_o_id", "ol_i_id", "ol_qty", "ol_discount", "ol_comments"]);
    for row in lines_rows {
        b.row(row)?;
    }
    b.finish()?;
    let mut b = Bulk::new(db, "cc_xacts", &["cx_o_id", "cx_type", "cx_num", "cx_name", "cx_expire", "cx_auth_id", "cx_xact_amt", "cx_xact_date", "cx_co_id"]);
    for row in cc_rows {
        b.row(row)?;
    }
    b.finish()?;

    let meta = Meta { items, ebs: scale.ebs, customers, seed, schema: SCHEMA_VERSION };
    write_meta(db, &meta)?;
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sqlite::Sqlite;
    use crate::db::read_meta;

    fn count(db: &mut dyn Backend, t: &str) -> i64 {
        db.query(&format!("SELECT COUNT(*) FROM {t}"), &[]).unwrap()[0][0].as_i64().unwrap()
    }

    #[test]
    fn scaling_rules_and_determinism() {
        let scale = Scale::new(1000, 1).unwrap();
        let mut a = Sqlite::memory().unwrap();
        let meta = populate(&mut a, scale, 7, &mut |_| {}).unwrap();
        assert_eq!(read_meta(&mut a), Some(meta.clone()));
        assert_eq!(count(&mut a, "item"), 1000);
        assert_eq!(count(&mut a, "author"), 250);
        assert_eq!(count(&mut a, "customer"), 2880);
        assert_eq!(count(&mut a, "address"), 5760);
        assert_eq!(count(&mut a, "orders"), 2592);
        assert_eq!(count(&mut a, "cc_xacts"), 2592);
        assert_eq!(count(&mut a, "country"), 92);
        assert_eq!(count(&mut a, "shopping_cart"), 0);
        let lines = count(&mut a, "order_line");
        assert!((2592..=5 * 2592).contains(&lines));
        // Mean 3 lines per order.
        assert!((lines as f64 / 2592.0 - 3.0).abs() < 0.15, "{lines}");
        // First quarter of items map 1:1 to authors.
        let r = a.query("SELECT COUNT(*) FROM item WHERE i_id <= 250 AND i_a_id <> i_id", &[]).unwrap();
        assert_eq!(r[0][0].as_i64(), Some(0));
        // Stock 10..30, cost <= srp.
        let r = a.query("SELECT MIN(i_stock), MAX(i_stock), SUM(CASE WHEN i_cost > i_srp THEN 1 ELSE 0 END) FROM item", &[]).unwrap();
        assert_eq!((r[0][0].as_i64(), r[0][1].as_i64(), r[0][2].as_i64()), (Some(10), Some(30), Some(0)));
        // Customer 12's user name is DigSyl(12), password its lower case.
        let r = a.query("SELECT c_uname, c_passwd FROM customer WHERE c_id = 12", &[]).unwrap();
        assert_eq!((r[0][0].text(), r[0][1].text()), ("OGAL".to_string(), "ogal".to_string()));

        let mut b = Sqlite::memory().unwrap();
        populate(&mut b, scale, 7, &mut |_| {}).unwrap();
        for t in ["item", "customer", "orders", "order_line", "cc_xacts", "address", "author"] {
            let q = format!("SELECT * FROM {t} ORDER BY 1 LIMIT 200");
            assert_eq!(a.query(&q, &[]).unwrap(), b.query(&q, &[]).unwrap(), "{t} differs for the same seed");
        }
        let mut c = Sqlite::memory().unwrap();
        populate(&mut c, scale, 8, &mut |_| {}).unwrap();
        let q = "SELECT i_title FROM item ORDER BY i_id LIMIT 20";
        assert_ne!(a.query(q, &[]).unwrap(), c.query(q, &[]).unwrap());
    }

    #[test]
    fn search_keys_find_titles_and_authors() {
        let mut db = Sqlite::memory().unwrap();
        populate(&mut db, Scale::new(1000, 1).unwrap(), 1, &mut |_| {}).unwrap();
        for key in [1u64, 7, 42, 200] {
            let k = digsyl_word(key);
            let r = db.query("SELECT COUNT(*) FROM item WHERE i_title LIKE ?", &[format!("{k}%").into()]).unwrap();
            assert!(r[0][0].as_i64().unwrap() >= 5, "title key {k}");
        }
        for key in [1u64, 50, 100] {
            let k = digsyl_word(key);
            let r = db.query("SELECT COUNT(*) FROM author WHERE a_lname LIKE ?", &[format!("{k}%").into()]).unwrap();
            assert!(r[0][0].as_i64().unwrap() >= 1, "author key {k}");
        }
    }
}
