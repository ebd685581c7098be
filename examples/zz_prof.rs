fn main() {
    let files: Vec<_> = std::env::args().skip(1).collect();
    let data: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let t = std::time::Instant::now();
    for _ in 0..5 { for d in &data { cudyn::image::inspect(d).unwrap(); } }
    eprintln!("{:?} per pass", t.elapsed() / 5);
}
