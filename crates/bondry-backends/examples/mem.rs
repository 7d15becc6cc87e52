fn mb() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() * 4096.0 / 1e6
}

fn main() {
    use bondry_backends::openapi::*;
    let bytes = std::fs::read(std::env::args().nth(1).unwrap()).unwrap();
    let t = std::time::Instant::now();
    let doc = document::read(&bytes).unwrap();
    println!("read {:?} live {:.1} MB", t.elapsed(), mb());
    let before = mb();
    let mapped = mapping::map(&doc, &mapping::Options::default()).unwrap();
    println!("map {:?} mapped {:.1} MB", t.elapsed(), mb() - before);
    let inputs: usize = mapped.operations.iter().map(|o| o.input_schema.to_string().len()).sum();
    let outputs: usize =
        mapped.operations.iter().filter_map(|o| o.output_schema.as_ref()).map(|o| o.to_string().len()).sum();
    println!("json text: inputs {:.1} MB outputs {:.1} MB", inputs as f64 / 1e6, outputs as f64 / 1e6);
    let before = mb();
    let mut names = bondry_catalogue::naming::Names::of_realm([], []);
    let tools = tools::tools("g", "g", mapped, &mut names, &bondry_core::schema::SchemaBounds::default());
    println!("tools {:?} +{:.1} MB (output compiled)", t.elapsed(), mb() - before);
    let before = mb();
    let compiled: Vec<_> = tools
        .tools
        .iter()
        .map(|t| bondry_core::schema::CompiledSchema::compile(&t.descriptor.input_schema, &Default::default()).unwrap())
        .collect();
    println!("inputs compiled +{:.1} MB", mb() - before);
    let before = mb();
    let outs: Vec<_> = tools
        .tools
        .iter()
        .filter_map(|t| t.descriptor.output_schema.as_ref())
        .map(|s| bondry_core::schema::CompiledSchema::compile(s, &Default::default()).unwrap())
        .collect();
    println!("outputs compiled again +{:.1} MB ({} outputs)", mb() - before, outs.len());
    drop(doc);
    println!("doc dropped, live {:.1} MB, {} tools", mb(), tools.tools.len());
    drop(compiled);
}
