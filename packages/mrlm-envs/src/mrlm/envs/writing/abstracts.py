"""Built-in introduction tasks: abstracts of imaginary papers, in the introduction record format.

The abstracts were written for this package and describe no real paper. Each record is a
``{"title", "abstract"}`` dict; none carries reference paragraphs, so these tasks have no ROUGE
component.
"""

from __future__ import annotations


def _record(title: str, abstract: str) -> dict[str, str]:
    return {"title": title, "abstract": " ".join(abstract.split())}


#: Eight abstracts.
ABSTRACTS: tuple[dict[str, str], ...] = (
    _record(
        "Windowed Recurrence for Long Document Classification",
        """Transformer classifiers read documents of a few thousand tokens well, but their cost grows
        quadratically with length, so legal contracts and clinical notes are usually truncated and
        evidence near the end is lost. We propose a windowed recurrent encoder that splits a document
        into overlapping windows, encodes each window with a small pretrained transformer, and passes
        a compact memory of sixteen vectors from one window to the next. Training uses truncated
        backpropagation through four windows, which keeps memory use constant in document length. On
        three benchmarks of contracts, patent claims and discharge summaries, the encoder matches a
        long-context transformer while using a fifth of its memory, and it improves accuracy by four
        points over truncation when the deciding clause appears late in the document.""",
    ),
    _record(
        "Private Federated Training Across Small Hospitals",
        """Hospitals hold data that could train better diagnostic models, yet privacy rules prevent
        pooling it, and small clinics have too few cases to train alone. Federated learning keeps data
        on site, but with differential privacy its accuracy drops sharply when each site contributes
        only a few hundred records. We introduce a clustering step that groups hospitals with similar
        patient populations before aggregation, and a noise schedule that spends more of the privacy
        budget in early rounds, when updates are large. On a simulated network of forty hospitals
        predicting sepsis from vital signs, our method recovers most of the accuracy lost to privacy
        noise and narrows the gap between small and large sites, under the same privacy guarantee.""",
    ),
    _record(
        "Cheap Soil Moisture Sensing for Smallholder Farms",
        """Irrigation decisions on smallholder farms are made by eye, because commercial soil moisture
        probes cost more than many farmers earn in a month. We built a sensor node from a capacitive
        probe, a low-power microcontroller and a long-range radio, for a parts cost of eleven dollars.
        Nodes report every hour to a solar-powered gateway shared by a village, and a phone message
        suggests when to irrigate. We calibrated the probe against lab measurements for three soil
        types and deployed sixty nodes on twenty farms over two growing seasons. Readings stayed within
        four percent of reference measurements, batteries lasted a full season, and farms that followed
        the messages used a quarter less water with no loss in maize yield.""",
    ),
    _record(
        "Traffic Forecasting When Road Sensors Go Dark",
        """City traffic forecasts rely on loop detectors that often fail for days, and graph neural
        networks trained on complete data degrade badly when many sensors are missing. We present a
        forecasting model that treats missing sensors as part of the input: a masked graph encoder
        learns to infer the state of silent roads from their neighbours, and a forecasting head
        predicts speeds for the next hour. During training we drop whole sensors at random rather
        than single readings, which mirrors how detectors actually fail. On two public highway data
        sets with up to forty percent of sensors removed, the model reduces forecasting error by a
        fifth compared with imputing first and forecasting second, and it degrades smoothly as more
        sensors disappear.""",
    ),
    _record(
        "A Curriculum of Object Shapes for Robotic Grasping",
        """Reinforcement learning can teach a robot arm to grasp objects, but training from scratch on
        varied household items needs millions of attempts, most of them failures that teach little.
        We propose a curriculum that starts with simple convex shapes and gradually introduces thin,
        concave and deformable objects as the success rate rises. Shapes are generated procedurally in
        simulation, and the curriculum chooses the next batch of shapes by how much the policy's value
        estimates disagree on them. Policies trained this way reach an eighty percent grasp success on
        unseen objects with a third of the simulated experience of uniform sampling, and they transfer
        to a real arm picking items from a cluttered bin with a small drop in success.""",
    ),
    _record(
        "Cross-Lingual Transfer for Misinformation Detection in Low-Resource Languages",
        """Misinformation spreads in every language, but labelled data for detecting it exists mostly
        in English. Classifiers for languages such as Amharic, Tagalog and Hausa therefore either do
        not exist or perform poorly. We study transfer from English fact-checking data through a
        multilingual encoder, and we add a small set of claims translated by volunteers together with
        machine-translated evidence. We also release a test set of two thousand claims in six
        languages, checked by native-speaking journalists. Transfer alone reaches about seventy
        percent of the accuracy of English, and adding five hundred translated claims per language
        closes half of the remaining gap. Errors concentrate on claims about local politics, where
        English training data offers no context.""",
    ),
    _record(
        "Carbon-Aware Scheduling of Batch Jobs in Data Centres",
        """The carbon intensity of electricity changes by a factor of three over a day in many grids,
        while data centres run batch jobs as soon as they are submitted. We design a scheduler that
        delays flexible jobs, such as model training and nightly analytics, to hours when the grid is
        cleaner, while respecting each job's deadline. The scheduler uses day-ahead forecasts of
        carbon intensity and a simple queue model to decide how long each job may wait. In a replay of
        three months of job logs from a university cluster under four national grids, the scheduler
        cuts emissions from batch work by a quarter to a third, with median job completion delayed
        by under two hours and no missed deadlines.""",
    ),
    _record(
        "Self-Supervised Speech Features for Dysarthric Speech Recognition",
        """People with dysarthria, a motor speech disorder caused by conditions such as Parkinson's
        disease or stroke, are often misunderstood by voice assistants because speech recognisers are
        trained on typical speech. Collecting large labelled corpora of dysarthric speech is hard and
        tiring for speakers. We show that speech representations learned without labels from thousands
        of hours of typical speech, then fine-tuned on one hour per speaker, cut word error rates by
        nearly half compared with systems trained from scratch. Adding a few minutes of the speaker's
        own unlabelled recordings to continued pretraining helps most for severe dysarthria. We
        analyse which errors remain and release our recipes for personalised recognisers.""",
    ),
)
