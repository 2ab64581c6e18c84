//! The dependence graph of one block: an edge from each op to every op of the
//! block that uses one of its results (uses inside nested regions count for
//! the op holding the region), and edges keeping ops with side effects in
//! program order. The pipeliner schedules by it.

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Dfs, Reversed, Topo};
use std::collections::{HashMap, HashSet};
use tilec_dialects::ir::{Block, Body, Op, Value};

/// The dependence graph of one block (see the module documentation).
pub struct BlockDependences {
    /// One node per op of the block; an edge from an op to each op that must stay after it.
    pub graph: DiGraph<Op, ()>,
    node_of: HashMap<Op, NodeIndex>,
}

impl BlockDependences {
    /// The dependences of `block`'s ops.
    pub fn build(body: &Body, block: Block) -> Self {
        let mut graph = DiGraph::new();
        let mut node_of = HashMap::new();
        let mut definer: HashMap<Value, NodeIndex> = HashMap::new();
        let mut last_effect: Option<NodeIndex> = None;
        for &op in &body.blocks[block].ops {
            let node = graph.add_node(op);
            node_of.insert(op, node);
            if !body.ops[op].def.traits.pure {
                if let Some(prev) = last_effect.replace(node) {
                    graph.update_edge(prev, node, ());
                }
            }
            let mut used: Vec<Value> = body.ops[op].operands.clone();
            for &region in &body.ops[op].regions {
                for nested in body.walk_region(region) {
                    used.extend(body.ops[nested].operands.iter().copied());
                }
            }
            for v in used {
                if let Some(&from) = definer.get(&v) {
                    graph.update_edge(from, node, ());
                }
            }
            for &r in &body.ops[op].results {
                definer.insert(r, node);
            }
        }
        BlockDependences { graph, node_of }
    }

    /// `targets` and every op of the block they depend on, in block order.
    pub fn backward_slice(&self, body: &Body, block: Block, targets: &[Op]) -> Vec<Op> {
        let reversed = Reversed(&self.graph);
        let mut seen = HashSet::new();
        for t in targets {
            let mut dfs = Dfs::new(reversed, self.node_of[t]);
            while let Some(n) = dfs.next(reversed) {
                seen.insert(self.graph[n]);
            }
        }
        body.blocks[block].ops.iter().copied().filter(|o| seen.contains(o)).collect()
    }

    /// The ops of the block in a dependence-respecting order, numbered.
    pub fn topological_order(&self) -> HashMap<Op, usize> {
        let mut topo = Topo::new(&self.graph);
        let mut order = HashMap::new();
        while let Some(n) = topo.next(&self.graph) {
            order.insert(self.graph[n], order.len());
        }
        order
    }
}
