"""Health and financial facts about a person: the English word lists (conditions,
medications, providers, procedures, health records, money nouns and amounts), the patterns for
a person as subject or owner, and the detector that looks for them in windows around anchor words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.safety.engine import Detector, RuleTable, Scan, word_set

TABLE = RuleTable()


# --- personal data: health and financial facts about a person --------------------------------
#
# A fact is a subject that is a person, a few auxiliary words, and an anchor: a diagnosis,
# condition, medication ... Each pattern runs only in windows around its anchor words.

_REL = (
    r"wife|husband|partner|spouse|son|daughter|kids?|child|children|mother|mom|mum|father|dad"
    r"|parents?|brother|sister|siblings?|friend|boyfriend|girlfriend|boss|manager|colleague"
    r"|coworker|co-worker|cousin|aunt|uncle|grandmother|grandma|grandfather|grandpa"
    r"|grandparents?|fianc[ée]e?|roommate|flatmate|neighbou?r|baby|family|client|niece|nephew"
)
_NOT_NAMES = (
    "The|This|That|These|Those|It|Its|There|Here|What|Which|Who|When|Where|Why|How|A|An|Each"
    "|Every|Some|Any|No|All|Our|Your|My|His|Her|Their|If|And|But|Or|So|Then|Also|Note|Please"
    "|Data|Dataset|Datasets|Users|Customers|Service|System|Model|App|Table|Field|Column"
    "|Record|Records|Test|Tests|Code|Function|Module|Class|Schema|Project|Team|Company|We"
    "|They|You|He|She|Research|Studies|Study|Patients|Everyone|Nobody|Somebody|Someone"
)
_NAME = rf"(?=[A-Z])(?!(?:{_NOT_NAMES})\b)[A-Z][a-z]{{1,20}}"
_POSS_WORDS = r"my|his|her|their|your|the\s+user's|user's"
_SUBJ_H = (
    rf"\b(?:(?i:i|we|he|she|they|you|(?:the\s+)?user|(?:the\s+)?patient)\b"
    rf"|(?i:{_POSS_WORDS}|our)\s+(?i:{_REL})\b|{_NAME}\b)"
)
_SUBJ_F = rf"\b(?:(?i:i|he|she|(?:the\s+)?user)\b|(?i:{_POSS_WORDS})\s+(?i:{_REL})\b)"
_POSS_H = rf"\b(?:(?i:{_POSS_WORDS}|our)(?:\s+(?i:{_REL})'s)?|{_NAME}'s)"
_POSS_F = rf"\b(?:(?i:{_POSS_WORDS})(?:\s+(?i:{_REL})'s)?|{_NAME}'s)"
_GAP_WORDS = (
    r"also|recently|just|currently|still|now|already|finally|actually|apparently"
    r"|unfortunately|sadly|officially|both|was|were|has|have|had|been|being|got|gotten|is|am"
    r"|are|be|became|become|becomes|will|would|may|might|could|can|started|starting|began"
    r"|newly|get|gets|getting|do|does|did|not|don't|doesn't|didn't|never|no|longer|really"
    r"|regularly|daily|usually|sometimes|since|first|reportedly|who|who's|once|later"
)
_GAP = rf"(?:'(?:m|s|re|ve|d)\b)?(?:\s+(?i:{_GAP_WORDS})\b){{0,4}}\s+"
_END = r"\b(?!-)"  # an anchor that is a whole word, not the start of "covid-safe"

_CONDITIONS = (
    r"diabetes|cancer|leukemia|leukaemia|lymphoma|melanoma|a\s+tumou?r|a\s+brain\s+tumou?r"
    r"|hiv|aids|hepatitis(?:\s+[abc])?|herpes|chlamydia|gonorrh?oea|syphilis|an?\s+st[di]"
    r"|depression|anxiety(?:\s+disorder)?|panic\s+(?:disorder|attacks)|bipolar(?:\s+disorder)?"
    r"|schizophrenia|ptsd|c-ptsd|ocd|adhd|autism|asperger'?s|epilepsy|asthma|copd|dementia"
    r"|alzheimer'?s|parkinson'?s|multiple\s+sclerosis|als|crohn'?s(?:\s+disease)?|colitis"
    r"|c[oe]eliac(?:\s+disease)?|ibs|lupus|fibromyalgia|endometriosis|pcos|infertility"
    r"|an\s+eating\s+disorder|anorexia|bulimia|insomnia|sleep\s+apnea|hypertension"
    r"|high\s+blood\s+pressure|heart\s+disease|a\s+heart\s+condition|heart\s+failure"
    r"|arthritis|tuberculosis|covid(?:-19)?|long\s+covid|migraines|a\s+disability"
    r"|an?\s+(?:drug|alcohol|gambling|opioid)?\s*addiction|alcoholism|a\s+drinking\s+problem"
    r"|a\s+drug\s+problem|obesity|hypothyroidism|hyperthyroidism|kidney\s+disease"
    r"|liver\s+disease|cirrhosis|cystic\s+fibrosis|sickle\s+cell(?:\s+disease)?|hemophilia"
    r"|a\s+mental\s+illness|mental\s+illness|a\s+chronic\s+illness|a\s+terminal\s+illness"
    r"|borderline\s+personality\s+disorder|bpd|psoriasis|glaucoma"
)
_NOUN_USE = (  # "diabetes data", "HIV testing": the condition as a topic, not a fact
    r"data|dataset|datasets|records?|research|patients|screening|module|table|field|column"
    r"|codes?|labels?|app|apps|api|service|model|classifier|prediction|risk|awareness|study"
    r"|studies|trial|trials|clinic|clinics|drugs?|foundation|charity|prevention|detection"
    r"|cases|statistics|stats|rates?|category|categories|tests?|testing|features?"
)
_MODS = (
    r"a|an|the|type\s+[12]|chronic|severe|mild|early|late|advanced|clinical|stage\s+(?:[1-4]"
    r"|i{1,3}|iv)|terminal|untreated|some|bad|major|generalized|social|postpartum|metastatic"
    r"|breast|lung|prostate|colon|skin|pancreatic|ovarian|brain|blood|early-onset"
)
_HEALTH_ADJ = (
    r"diabetic|epileptic|asthmatic|bipolar|schizophrenic|autistic|anorexic|bulimic"
    r"|hiv[- ]?(?:positive|negative)|pregnant|infertile|suicidal|an\s+alcoholic|alcoholic"
    r"|an\s+addict|in\s+remission|in\s+rehab|on\s+dialysis|on\s+chemo(?:therapy)?"
    r"|in\s+chemo(?:therapy)?|in\s+therapy|in\s+counsell?ing|in\s+treatment\s+for"
    r"|immunocompromised|terminally\s+ill|clinically\s+depressed|allergic\s+to"
    r"|expecting\s+a\s+baby|having\s+a\s+baby|trying\s+to\s+conceive|going\s+through\s+ivf"
    r"|on\s+the\s+autism\s+spectrum|neurodivergent|hospitali[sz]ed|sectioned"
)
_MEDS = (
    r"sertraline|zoloft|prozac|fluoxetine|lexapro|escitalopram|citalopram|paroxetine|paxil"
    r"|venlafaxine|effexor|duloxetine|cymbalta|bupropion|wellbutrin|mirtazapine|trazodone"
    r"|lithium|adderall|ritalin|methylphenidate|vyvanse|concerta|xanax|alprazolam|valium"
    r"|diazepam|klonopin|clonazepam|lorazepam|ativan|insulin|metformin|ozempic|semaglutide"
    r"|wegovy|mounjaro|tirzepatide|prep|truvada|descovy|antiretrovirals|arvs"
    r"|antidepressants|antipsychotics|ssris?|seroquel|quetiapine|abilify|aripiprazole"
    r"|risperidone|olanzapine|lamotrigine|lamictal|gabapentin|pregabalin|oxycodone|methadone"
    r"|suboxone|buprenorphine|naltrexone|levothyroxine|synthroid|chemo(?:therapy)?|hrt"
    r"|testosterone|estrogen|oestrogen|birth\s+control|the\s+pill|statins|atorvastatin"
    r"|lisinopril|warfarin|blood\s+thinners|opioids|prednisone|anti-?anxiety\s+meds"
    r"|medication\s+for|meds\s+for|pills\s+for|immunotherapy|radiation\s+therapy|dialysis"
)
_PROVIDERS = (
    r"therapist|psychiatrist|psychologist|oncologist|counsell?or|endocrinologist"
    r"|cardiologist|neurologist|rheumatologist|psychotherapist|fertility\s+(?:doctor|clinic)"
    r"|addiction\s+specialist|hiv\s+specialist|gynecologist|gynaecologist|urologist"
)
_PROCEDURES = (
    r"surgery|a\s+mastectomy|an\s+abortion|a\s+miscarriage|a\s+heart\s+attack"
    r"|a\s+stroke|a\s+seizure|seizures|panic\s+attacks?|a\s+panic\s+attack"
    r"|a\s+nervous\s+breakdown|a\s+vasectomy|ivf|a\s+transplant|chemo(?:therapy)?|a\s+biopsy"
    r"|a\s+colonoscopy|a\s+hysterectomy|an\s+overdose|a\s+psychotic\s+episode"
    r"|a\s+manic\s+episode|rehab"
)
_HEALTH_RECORDS = (
    r"(?:hiv|std|sti|covid(?:-19)?|cancer|mental\s+health|medical|psychiatric|pregnancy"
    r"|genetic|brca|vaccination|vaccine|drug\s+test|blood\s+test|biopsy|mri|lab|health)"
    r"\s+(?:status|results?|diagnosis|history|records?|prognosis|report)"
    r"|diagnosis|prognosis|medical\s+(?:history|records?|condition|issues?|leave)"
    r"|medications?|meds|prescriptions?|therapist|psychiatrist|psychologist|oncologist"
    r"|chemo(?:therapy)?|treatment\s+plan|blood\s+(?:sugar|pressure|glucose)|a1c"
    r"|cd4(?:\s+count)?|viral\s+load|insulin|disability|illness|surgery|pregnancy|miscarriage"
    r"|abortion|due\s+date|bmi|psychiatric\s+(?:condition|history)"
)
# Each fact rule has two parts. The predicate ("has type 2 diabetes", "takes sertraline",
# "salary is $120k") is searched in the lower-case text, in windows around its anchor words;
# then a person must stand right before it in the original text (names need their capital):
# a subject ("I", "she's been", "my wife", "Bob") or a possessive ("my", "Alice's").
# A condition used as a noun ("diabetes data") is not a fact.

_HAVE = (
    r"have|has|had|'ve|having|suffers?\s+from|suffering\s+from|suffered\s+from"
    r"|struggles?\s+with|struggling\s+with|struggled\s+with|lives?\s+with|living\s+with"
    r"|battling|fighting|recovering\s+from|recovered\s+from|treated\s+for"
    r"|being\s+treated\s+for|got"
)
_TAKE = (
    r"take|takes|took|taking|on|prescribed|started|starting|stopped|quit|inject|injects"
    r"|injecting|needs|need"
)
_DOSE = r"a|an|the|daily|my|his|her|some|low-dose|high-dose|\d+\s?mg(?:\s+of)?"
_SEE = r"see|sees|seeing|saw|visit|visits|visiting|visited|have|has|started\s+seeing"
_UNDERGO = (
    r"had|have|has|having|underwent|undergoing|getting|get|got|scheduled|booked"
    r"|recovering\s+from"
)

_AMOUNT = (  # on lower-case text
    r"(?:(?:[$€£¥₹]|(?:usd|eur|gbp|chf|cad|aud|inr|us\$)\s?)\s?\d[\d,.]*(?:\s?(?:[km]\b|mm\b"
    r"|bn\b|million|thousand|grand))?"
    r"|\d[\d,.]*(?:\s?(?:[km]\b|million|thousand|grand))?\s?(?:dollars|euros?|pounds|usd"
    r"|eur|gbp|chf|rupees|bucks|€|\$)"
    r"|\d[\d,.]*\s?k\b)"
)
_APPROX = (
    r"(?:about|around|roughly|approximately|approx\.?|only|just|over|under|nearly|almost|~"
    r"|more\s+than|less\s+than|close\s+to|like)"
)
_FIN_NOUNS = (
    r"salary|income|pay|paycheck|paycheque|wages?|compensation|comp|bonus|net\s+worth|rent"
    r"|mortgage(?:\s+payment)?|debts?|savings|bank\s+balance|account\s+balance"
    r"|checking\s+account|savings\s+account|401\(?k\)?|pension|retirement\s+savings"
    r"|tax\s+refund|tax\s+bill|alimony|child\s+support|student\s+loans?|loans?|car\s+payment"
    r"|credit\s+card\s+(?:debt|balance|bill)|hourly\s+rate|day\s+rate|raise|inheritance"
    r"|portfolio|investments|overdraft|medical\s+bills|back\s+taxes"
)
_FIN_MODS = (
    r"annual|monthly|yearly|weekly|gross|net|base|total|current|new|old|starting|take-home"
    r"|take\s+home|household|outstanding|remaining|combined|personal"
)
_FIN_VERBS = (
    r"is|was|are|were|of|:|=|comes\s+to|came\s+to|totals?|totaled|totalled|hit|reached"
    r"|dropped\s+to|went\s+up\s+to|rose\s+to|is\s+now|will\s+be|sits\s+at|stands\s+at"
    r"|increased\s+to|decreased\s+to|is\s+currently|'s|just\s+hit|is\s+still"
)

_SUBJECT_H = re.compile(rf"{_SUBJ_H}(?:{_GAP})?\Z")
_OWNER_H = re.compile(rf"{_POSS_H}\s+\Z")
_SUBJECT_F = re.compile(rf"{_SUBJ_F}(?:{_GAP})?\Z")
_OWNER_F = re.compile(rf"{_POSS_F}\s+\Z")
_NOUN_AFTER = re.compile(rf"\s+(?:{_NOUN_USE})\b")  # case-sensitive: "Patients" starts anew
_SUBJECT_REACH = 110  # how far before a predicate its subject may start


@dataclass(frozen=True)
class _Fact:
    anchors: frozenset[bytes]  # words of which one is in every match of the predicate
    predicate: re.Pattern[str]  # searched in the lower-case text
    person: re.Pattern[str]  # must end right where the predicate starts (original text)
    needs_amount: bool = False  # only looked for when the text has a sum of money


def _fact(anchors: str, predicate: str, person: re.Pattern[str], amount: bool = False) -> _Fact:
    return _Fact(word_set(anchors), re.compile(predicate), person, amount)


_HEALTH_FACTS = (
    _fact("diagnosed tested", r"(?:diagnosed|tested\s+positive)\s+(?:with|for|as)\b", _SUBJECT_H),
    _fact(
        """diabetes cancer leukemia leukaemia lymphoma melanoma tumor tumour hiv aids hepatitis
        herpes chlamydia gonorrhea gonorrhoea syphilis std sti depression anxiety panic bipolar
        schizophrenia ptsd ocd adhd autism asperger aspergers epilepsy asthma copd dementia
        alzheimer alzheimers parkinson parkinsons sclerosis als crohn crohns colitis celiac
        coeliac ibs lupus fibromyalgia endometriosis pcos infertility disorder anorexia
        bulimia insomnia apnea hypertension blood heart arthritis tuberculosis covid migraines
        disability addiction alcoholism drinking drug obesity hypothyroidism hyperthyroidism
        kidney liver cirrhosis fibrosis sickle hemophilia illness bpd psoriasis glaucoma""",
        rf"(?:{_HAVE})(?:\s+(?:{_MODS}))*\s+(?:{_CONDITIONS}){_END}",
        _SUBJECT_H,
    ),
    _fact(
        """diabetic epileptic asthmatic bipolar schizophrenic autistic anorexic bulimic hiv
        pregnant infertile suicidal alcoholic addict remission rehab dialysis chemo
        chemotherapy therapy counseling counselling treatment immunocompromised terminally
        depressed allergic baby conceive ivf autism neurodivergent hospitalized hospitalised
        sectioned""",
        rf"(?:type\s+[12]\s+)?(?:{_HEALTH_ADJ}){_END}"
        rf"(?!\s+with\s+(?:ideas|possibilities|meaning|potential)\b)",
        _SUBJECT_H,
    ),
    _fact(
        """sertraline zoloft prozac fluoxetine lexapro escitalopram citalopram paroxetine paxil
        venlafaxine effexor duloxetine cymbalta bupropion wellbutrin mirtazapine trazodone
        lithium adderall ritalin methylphenidate vyvanse concerta xanax alprazolam valium
        diazepam klonopin clonazepam lorazepam ativan insulin metformin ozempic semaglutide
        wegovy mounjaro tirzepatide prep truvada descovy antiretrovirals arvs antidepressants
        antipsychotics ssri ssris seroquel quetiapine abilify aripiprazole risperidone
        olanzapine lamotrigine lamictal gabapentin pregabalin oxycodone methadone suboxone
        buprenorphine naltrexone levothyroxine synthroid chemo chemotherapy hrt testosterone
        estrogen oestrogen birth pill statins atorvastatin lisinopril warfarin thinners opioids
        prednisone anxiety meds medication pills immunotherapy radiation dialysis""",
        rf"(?:{_TAKE})(?:\s+(?:{_DOSE}))*\s+(?:{_MEDS}){_END}"
        rf"(?!\s+(?:ion|batter(?:y|ies)|cells?|mining|prices?|stocks?)\b)",
        _SUBJECT_H,
    ),
    _fact(
        """therapist psychiatrist psychologist oncologist counselor counsellor endocrinologist
        cardiologist neurologist rheumatologist psychotherapist fertility addiction hiv
        gynecologist gynaecologist urologist""",
        rf"(?:{_SEE})\s+(?:a|an|my|his|her|their)\s+(?:{_PROVIDERS}){_END}",
        _SUBJECT_H,
    ),
    _fact(
        """surgery mastectomy abortion miscarriage heart stroke seizure seizures panic breakdown
        vasectomy ivf transplant biopsy colonoscopy hysterectomy overdose psychotic manic
        rehab chemo chemotherapy""",
        rf"(?:{_UNDERGO})(?:\s+(?:a|an|my|his|her|their))?\s+(?:{_PROCEDURES}){_END}"
        rf"(?!\s+of\s+(?:luck|genius|insight)\b)",
        _SUBJECT_H,
    ),
    _fact(
        """hiv std sti covid cancer mental medical psychiatric pregnancy genetic brca
        vaccination vaccine drug blood biopsy mri lab health diagnosis prognosis medications
        medication meds prescription prescriptions therapist psychiatrist psychologist
        oncologist chemo chemotherapy treatment a1c cd4 viral insulin disability illness
        surgery miscarriage abortion due bmi""",
        rf"(?:{_HEALTH_RECORDS}){_END}",
        _OWNER_H,
    ),
)

_FINANCIAL_FACTS = (
    _fact(  # "my salary is $120k", "User's monthly rent is $2,400"
        """salary income pay paycheck paycheque wage wages compensation comp bonus worth rent
        mortgage debt debts savings balance checking 401 401k pension retirement refund tax
        alimony support loan loans payment rate raise inheritance portfolio investments
        overdraft bills taxes""",
        rf"(?:(?:{_FIN_MODS})\s+)*(?:{_FIN_NOUNS})\b\s*(?:(?:{_FIN_VERBS})\s*)?"
        rf"(?:{_APPROX}\s*)?{_AMOUNT}",
        _OWNER_F,
        amount=True,
    ),
    _fact(  # "my credit score is 580", "her bankruptcy"
        "credit fico bankruptcy foreclosure eviction collector",
        rf"(?:credit\s+score|fico(?:\s+score)?|credit\s+rating)\b(?:\s*(?:{_FIN_VERBS}))?\s*"
        rf"(?:{_APPROX}\s*)?[3-8]\d\d\b"
        rf"|(?:bankruptcy|foreclosure|eviction|debt\s+collector|credit\s+history)\b",
        _OWNER_F,
    ),
    _fact(  # "I have $40,000 in credit card debt", "I owe the IRS $5k", "she earns £65k"
        """debt loans loan red overdrawn owed behind saved savings bank checking 401 401k
        retirement stocks crypto investments owe owes earn earns earned earning make makes
        made making home paid bring brings brought""",
        rf"(?:(?:have|has|had|owe|owes|owed|carry|carries|carrying|got|racked\s+up|am|is|'m"
        rf"|'s)\s+)?(?:{_APPROX}\s+)?{_AMOUNT}(?:\s+[\w']+){{0,4}}?\s+(?:in\s+debt|of\s+debt"
        rf"|debt|in\s+(?:\w+\s+){{0,2}}(?:debt|loans?)|loans?|in\s+the\s+red|overdrawn|owed"
        rf"|behind|saved|in\s+(?:\w+\s+){{0,2}}(?:savings|the\s+bank|checking|401\(?k\)?"
        rf"|retirement|stocks|crypto|investments))\b"
        rf"|(?:owe|owes|owed)\s+(?:[\w']+\s+){{0,3}}?(?:{_APPROX}\s+)?{_AMOUNT}"
        rf"|(?:earn|earns|earned|earning|make|makes|made|making|take\s+home|takes\s+home"
        rf"|(?:get|gets|got|am|is|was|are|were|'m|'s|being)\s+paid|bring\s+in|brings\s+in"
        rf"|brought\s+in)\s+(?:{_APPROX}\s+)?{_AMOUNT}",
        _SUBJECT_F,
        amount=True,
    ),
    _fact(  # "I declared bankruptcy", "he was evicted", "I'm behind on my mortgage"
        """bankruptcy bankrupt insolvent evicted foreclosed foreclosure collections behind
        defaulted debt welfare stamps paycheck broke""",
        r"(?:(?:declared|filed|filing|file|went|going|go|gone|became|become)\s+)?(?:for\s+)?"
        r"(?:chapter\s+(?:7|11|13)\s+)?(?:bankruptcy|bankrupt|insolvent)\b"
        r"|(?:evicted|foreclosed\s+on|in\s+foreclosure|in\s+collections"
        r"|behind\s+on\s+(?:(?:my|his|her|their)\s+)?(?:rent|mortgage|payments|bills|loans?)"
        r"|defaulted\s+on|in\s+(?:serious\s+|deep\s+|massive\s+)?debt|drowning\s+in\s+debt"
        r"|buried\s+in\s+debt|on\s+food\s+stamps|on\s+welfare"
        r"|living\s+paycheck\s+to\s+paycheck)\b"
        r"|(?:am|is|are|was|were|'m|'s|'re)\s+(?:(?:flat|completely|totally|dead|so)\s+)?"
        r"broke\b(?!\s+(?:the|a|an|it|my|this|that|our|their|his|her|into|down|up|out|off"
        r"|through|with|from)\b)",
        _SUBJECT_F,
    ),
)
_CURRENCY_SIGNS = ("$", "€", "£", "¥", "₹")
_CURRENCY_WORDS = word_set(
    "dollars euro euros pounds usd eur gbp chf cad aud inr rupees bucks million thousand grand"
)
_K_AMOUNT_RE = re.compile(r"\d ?k\b")


def _has_amount(scan: Scan) -> bool:
    return scan.digits > 0 and (
        any(sign in scan.text for sign in _CURRENCY_SIGNS)
        or bool(_CURRENCY_WORDS & scan.words)
        or _K_AMOUNT_RE.search(scan.low_ascii) is not None
    )


def _fact_detector(facts: tuple[_Fact, ...], before: int, after: int) -> Detector:
    def detect(scan: Scan) -> bool:
        words = scan.words
        amount: bool | None = None
        for fact in facts:
            hits = fact.anchors & words
            if not hits:
                continue
            if fact.needs_amount:
                if amount is None:
                    amount = _has_amount(scan)
                if not amount:
                    continue
            low, text = scan.low, scan.text
            for start, end in scan.windows(hits, before, after):
                pos = start
                while (match := fact.predicate.search(low, pos, end)) is not None:
                    p = match.start()
                    pos = p + 1
                    if p and low[p - 1].isalnum() and low[p] != "'":
                        continue  # starts inside a word
                    if _NOUN_AFTER.match(text, match.end()):
                        continue
                    if fact.person.search(text, max(0, p - _SUBJECT_REACH), p):
                        return True
        return False

    return detect


TABLE.add(
    "health_fact",
    "a health fact about a person",
    _fact_detector(_HEALTH_FACTS, before=70, after=40),
)
TABLE.add(
    "financial_fact",
    "a financial fact about a person",
    _fact_detector(_FINANCIAL_FACTS, before=90, after=60),
)
